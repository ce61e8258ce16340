// Reconcile: (TrainingJob, its observed pods, whether its Service exists, now) -> plan.
// Level-triggered: it looks only at observed state and status, never at which event
// woke it, so calling it again with the same inputs yields the same plan (idempotent).
// The lifecycle (docs/architecture.md §2.4) in one place:
//   attempt 0                   -> attempt 1: Service + N gated pods
//   member disrupted / failed   -> count it (status first), delete the whole gang, wait
//                                  until every pod is gone, back off (failures only),
//                                  attempt+1 with PHALANX_RESUME_FROM
//   all members succeeded       -> Succeeded
//   preempt-request annotation  -> notify workers, wait for a newer checkpoint or the
//                                  deadline, drain with DisruptionTarget, restart
//   suspend / activeDeadline / TTL / cleanPodPolicy / invalid spec
// Pure: no I/O, no clock; thread-safe.
#pragma once

#include <vector>

#include "operator/api/observed_pod.h"
#include "operator/api/training_job.h"
#include "operator/cost/price_table.h"
#include "operator/reconcile/desired_state.h"
#include "operator/reconcile/reconcile_plan.h"

namespace phalanx::op {

struct ReconcileOptions {
  PodOptions pod;
  // A pod Terminating this long past its deletionTimestamp (its node is gone and no
  // kubelet will ever confirm) loses its finalizer and is force-deleted.
  Duration stuck_terminating_timeout = std::chrono::minutes(5);
  // How often status.preemptionCost is refreshed while the gang runs.
  Duration cost_refresh = std::chrono::seconds(30);
  // status.usage is brought up to date on every status write the reconcile makes anyway, when
  // a pod's GPU interval or idle period ends or begins, and otherwise at most this often while
  // pods hold GPUs (the only periodic write usage adds).
  Duration usage_update = std::chrono::minutes(5);
  const PriceTable* prices = nullptr;  // null: GPU-seconds only, no cost
};

// `pods`: every pod labelled phalanx.io/job-name=<job> in the job's namespace (any attempt).
ReconcilePlan Reconcile(const TrainingJob& job, const std::vector<ObservedPod>& pods,
                        bool service_exists, SystemTime now, const ReconcileOptions& options);

// Pods whose TrainingJob no longer exists: release the checkpoint finalizer so garbage
// collection can finish.
ReconcilePlan ReconcileOrphanPods(const std::vector<ObservedPod>& pods);

}  // namespace phalanx::op
