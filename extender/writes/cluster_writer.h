// ClusterWriter: every write the extender makes to the API server (docs/architecture.md §2.2, §2.5),
// behind one small interface so the scheduling logic is tested with an in-memory fake
// and the daemon plugs in the Kubernetes client (core/kube) without touching it.
//
// Calls are synchronous and may block on the network: the Extender never makes them
// while holding its ledger lock; it runs them on its write pool (write_pool.h).
// Implementations must be thread-safe.
#pragma once

#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "core/base/status.h"

namespace phalanx::extender {

struct PodRef {
  std::string ns;
  std::string name;
  std::string uid;
  std::string Key() const { return ns + "/" + name; }
};

class ClusterWriter {
 public:
  virtual ~ClusterWriter() = default;
  // Merge-patches metadata.annotations["phalanx.io/devices"] (the gang commit point);
  // an empty `devices_json` removes the annotation (a gang that missed its commit point).
  virtual Status PatchPodDevices(const PodRef& pod, const std::string& devices_json) = 0;
  // POST pods/<name>/binding.
  virtual Status BindPod(const PodRef& pod, const std::string& node) = 0;
  // Removes the phalanx.io/gang scheduling gate.
  virtual Status LiftGangGate(const PodRef& pod) = 0;
  // Merge-patches metadata.annotations["phalanx.io/requeued-at"] = `stamp` on a pending pod, so
  // that kube-scheduler retries it now (extender/admission/gang_requeue.cc). Default: nothing to requeue
  // (test writers that do not model kube-scheduler).
  virtual Status RequeuePod(const PodRef& pod, const std::string& stamp) {
    (void)pod;
    (void)stamp;
    return OkStatus();
  }
  // POST pods/<name>/eviction (the API server adds DisruptionTarget when it allows it; a
  // PodDisruptionBudget refusal is a 429 that changes nothing).
  virtual Status EvictPod(const PodRef& pod, const std::string& reason) = 0;
  // DisruptionTarget condition, then DELETE (no budget check): only for the rest of a gang
  // that is already partly gone (extender/eviction/gang_evictor.h).
  virtual Status DeletePod(const PodRef& pod, const std::string& reason) = 0;
  // Sets phalanx.io/preempt-request on a TrainingJob.
  virtual Status RequestGracefulPreemption(const std::string& ns, const std::string& job,
                                           const std::string& request_json) = 0;
};

// In-memory writer: records every call, optionally fails chosen ones. Used by tests and
// by embedded mode (--cluster-snapshot), where there is no API server to write to.
class RecordingWriter final : public ClusterWriter {
 public:
  struct Call {
    std::string verb;    // "devices", "bind", "ungate", "requeue", "evict", "delete", "preempt-request"
    std::string target;  // "ns/name" (pod or TrainingJob)
    std::string value;   // devices JSON, node, reason, request JSON
  };

  Status PatchPodDevices(const PodRef& pod, const std::string& devices_json) override;
  Status BindPod(const PodRef& pod, const std::string& node) override;
  Status LiftGangGate(const PodRef& pod) override;
  Status RequeuePod(const PodRef& pod, const std::string& stamp) override;
  Status EvictPod(const PodRef& pod, const std::string& reason) override;
  Status DeletePod(const PodRef& pod, const std::string& reason) override;
  Status RequestGracefulPreemption(const std::string& ns, const std::string& job,
                                   const std::string& request_json) override;

  // Calls with this verb on this target fail with Unavailable.
  void FailOn(std::string verb, std::string target);
  std::vector<Call> calls() const;
  std::vector<Call> CallsOf(const std::string& verb) const;

 private:
  Status Record(std::string verb, std::string target, std::string value);

  mutable std::mutex mu_;
  std::vector<Call> calls_;
  std::set<std::pair<std::string, std::string>> failures_;
};

}  // namespace phalanx::extender
