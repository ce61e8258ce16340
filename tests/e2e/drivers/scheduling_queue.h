// SchedulingQueueModel: kube-scheduler v1.26's scheduling queue
// (pkg/scheduler/internal/queue/scheduling_queue.go, eventhandlers.go), for the e2e
// SchedulerDriver. What it keeps of the real one:
//  - activeQ (tried in priority order, then creation), backoffQ and unschedulablePods;
//  - a failed attempt goes to unschedulablePods, or to backoffQ when a move request came
//    during the attempt (moveRequestCycle >= the pod's scheduling cycle);
//  - backoff = 1 s doubled per attempt, at most 10 s, counted from the failure, flushed to
//    activeQ once a second (flushBackoffQCompleted);
//  - a pod leaves unschedulablePods only on: an update of its own object that isPodUpdated
//    sees (anything but resourceVersion, generation, status, managedFields, finalizers), a
//    cluster event that moves every unschedulable pod (MoveAllToActiveOrBackoffQueue: Node
//    added, Node updated in spec.unschedulable, allocatable, labels, taints or a condition's
//    status, which is v1.26's nodeSchedulingPropertiesChange (annotations are NOT an event),
//    or an assigned pod deleted), or after podMaxInUnschedulablePodsDuration (5 min) checked
//    every 30 s (flushUnschedulablePodsLeftover); it goes to backoffQ while still backing off;
//  - an extender's rejection names no plugin, so every move event applies to the pod.
// Not modelled: per-plugin event filtering (queueing hints), AssignedPodAdded's affinity
// matching (Phalanx pods carry no inter-pod affinity), PV/PVC/StorageClass/CSINode events.
// Gated pods are not tracked (v1.26 keeps them aside until the gate goes, then they join
// activeQ: here they appear as new).
// Thread-compatible: the driver calls it from its loop under its mutex.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/kube/client.h"

namespace phalanx::e2e {

struct SchedulingQueueOptions {
  std::chrono::milliseconds initial_backoff{1000};
  std::chrono::milliseconds max_backoff{10000};
  std::chrono::milliseconds max_in_unschedulable{5 * 60 * 1000};
  std::chrono::milliseconds flush_unschedulable_period{30000};
  std::chrono::milliseconds flush_backoff_period{1000};
};

class SchedulingQueueModel {
 public:
  using Time = std::chrono::steady_clock::time_point;
  enum class Where { kActive, kBackoff, kUnschedulable, kInFlight, kAssumed };

  explicit SchedulingQueueModel(SchedulingQueueOptions options = {}) : options_(options) {}

  // One look at the cluster: `pending` = this scheduler's unbound, ungated, live pods;
  // `nodes` and `pods` = the full lists (events are their differences from the last look).
  void Observe(const std::vector<const kube::Json*>& pending, const kube::Json& nodes, const kube::Json& pods, Time now);
  // The pods to attempt now (activeQ after the flushes due), best first. Each becomes in flight.
  std::vector<std::string> PopReady(Time now);
  // The attempt of an in-flight pod failed (filter found no node, error, failed bind).
  void Failed(const std::string& uid, Time now);
  // A failed bind: kube-scheduler also moves every unschedulable pod (AssignedPodDelete).
  void MoveAll(Time now, const std::string& event);
  // The attempt succeeded: assumed while its bind runs (a failed bind: MoveAll, then Failed).
  void Scheduled(const std::string& uid);

  Where where(const std::string& uid) const;
  bool tracked(const std::string& uid) const { return pods_.count(uid) != 0; }
  // Move events seen so far ("NodeAdd", "NodeUpdate", "AssignedPodDelete", "PodUpdate",
  // "UnschedulableTimeout", ...), for assertions and diagnostics.
  const std::vector<std::string>& events() const { return events_; }

 private:
  struct Queued {
    Where where = Where::kActive;
    int attempts = 0;
    int64_t cycle = 0;  // scheduling cycle of its last attempt
    Time timestamp{};   // added, or last failure
    int64_t priority = 0;
    std::string created;
    std::string stripped;  // the object as isPodUpdated compares it
  };
  std::chrono::milliseconds Backoff(const Queued& q) const;
  void MoveToActiveOrBackoff(Queued& q, Time now);

  const SchedulingQueueOptions options_;
  std::map<std::string, Queued> pods_;              // uid -> state
  std::map<std::string, std::string> nodes_;        // name -> scheduling properties
  std::set<std::string> bound_;                     // assigned pods' uids
  bool first_ = true;
  int64_t scheduling_cycle_ = 0, move_request_cycle_ = -1;
  Time last_backoff_flush_{}, last_unschedulable_flush_{};
  std::vector<std::string> events_;
};

}  // namespace phalanx::e2e
