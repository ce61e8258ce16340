// KubeClusterWriter: the ClusterWriter of API-server mode (docs/architecture.md §2.2, §2.5) over the
// Kubernetes client (core/kube). Each call is one small, idempotent write:
//   devices    merge patch of metadata.annotations["phalanx.io/devices"]
//   bind       POST pods/<name>/binding (with the pod's UID as precondition)
//   ungate     JSON patch that removes only the phalanx.io/gang entry of spec.schedulingGates,
//              guarded by a `test` of the list it read (a concurrent change re-reads; a pod
//              without the gate is already done)
//   evict      strategic merge of a DisruptionTarget condition on pods/status (best effort),
//              then POST pods/<name>/eviction
//   preempt-request  merge patch of the TrainingJob's phalanx.io/preempt-request annotation
// Every call is logged on failure and counted in phalanx_extender_api_writes_total{verb,result}.
// The Extender runs these on its write pool, never under its ledger lock; the client it is
// given is the write client (budget and deadlines: budgeted_transport.h).
// Thread-safe (the client is).
#pragma once

#include <memory>
#include <string>

#include <spdlog/spdlog.h>

#include "core/kube/client.h"
#include "core/metrics/registry.h"
#include "extender/writes/cluster_writer.h"

namespace phalanx::extender {

class KubeClusterWriter final : public ClusterWriter {
 public:
  // `registry` may be null (no metrics).
  KubeClusterWriter(kube::KubeClient& client, metrics::Registry* registry, std::shared_ptr<spdlog::logger> logger);

  Status PatchPodDevices(const PodRef& pod, const std::string& devices_json) override;
  Status BindPod(const PodRef& pod, const std::string& node) override;
  Status LiftGangGate(const PodRef& pod) override;
  Status RequeuePod(const PodRef& pod, const std::string& stamp) override;
  Status EvictPod(const PodRef& pod, const std::string& reason) override;
  Status DeletePod(const PodRef& pod, const std::string& reason) override;
  Status RequestGracefulPreemption(const std::string& ns, const std::string& job,
                                   const std::string& request_json) override;

 private:
  Status Done(const char* verb, const std::string& target, Status status);

  kube::KubeClient& client_;
  std::shared_ptr<spdlog::logger> logger_;
  metrics::CounterFamily* writes_ = nullptr;
};

}  // namespace phalanx::extender
