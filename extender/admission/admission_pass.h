// The admission pass: the scheduling engine (core/scheduling, docs/algorithms.md §8) driven by
// the Ledger. Gated gangs that are complete wait in the engine; what it admits is reserved as a
// plan and its gates are lifted; its evictions go to Disruptions. Also the filter-time planning
// of ungated gangs (TryPlan, gang_planning.cc) and their requeue in kube-scheduler
// (gang_requeue.cc), and the team queues as the pass sees them (queues/admission_queues.cc).
// It answers the verbs what belongs to admission and the team queues (AdmissionHandle; the
// quota of work outside the engine is QueueQuotas').
//
// The Extender owns the engine, the locks and this pass, and calls it under the admission lock
// (Tick, SetQueues, introspection); the pass takes the ledger lock itself (admission.cc has how
// a pass is planned under the shared lock and committed under the exclusive one).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/scheduling/engine.h"
#include "extender/eviction/disruptions.h"
#include "extender/queues/queue_quotas.h"
#include "extender/queues/queue_sync.h"
#include "extender/verbs/verb_handle.h"

namespace phalanx::extender {

class AdmissionPass final : public AdmissionHandle {
 public:
  AdmissionPass(VerbHandle& handle, WriteHandle writes, scheduling::Engine& engine, Disruptions& disruptions,
                QueueQuotas& quotas)
      : h_(handle), writes_(writes), engine_(engine), disruptions_(disruptions), quotas_(quotas) {}
  AdmissionPass(const AdmissionPass&) = delete;
  AdmissionPass& operator=(const AdmissionPass&) = delete;

  // The tick's part (admission lock held; takes the ledger lock): the engine's pass over the
  // ledger, then ungated gangs refused at filter.
  void Run(MonotonicTime now);
  // The team queues changed (QueueQuotas::Set succeeded; admission lock and ledger lock held
  // exclusively): waiting gangs re-enter the engine at the next pass with their queue resolved
  // anew (their place is kept: the engine orders by first submission); a running gang whose
  // queue changed is let go and adopted again, counted in its new queue.
  void OnQueuesChanged();

  // --- introspection (admission lock and ledger lock held) ---
  // Each team queue as the engine counts it now; empty without queues.
  std::vector<QueueStatusInfo> QueueStatuses() const;
  // "; queue team-a (H100: 8/8 nominal GPUs used, 0 borrowed, 0 lent)"; "" without queues.
  std::string DescribeQueue(const GangRecord& g) const;
  bool IsQueued(const GangKey& key) const { return engine_waiting_.contains(key); }
  // Runs between an admission's planning (shared lock released) and its commit.
  void SetHookForTest(std::function<void()> hook) { hook_for_test_ = std::move(hook); }

  // --- AdmissionHandle (verbs/verb_handle.h) ---
  // Plans and reserves an ungated gang at filter (ledger lock held exclusively, admission lock
  // not held); "" on success, else why not (also kept in last_no_fit). A plan beyond the gang's
  // team queue's quota is refused with the queue's reason, and *over_quota set: preempting on
  // its nodes would not help (it fits there).
  std::string TryPlan(GangRecord& g, MonotonicTime now, bool* over_quota) override;
  bool QueuesOn() const override { return quotas_.On(); }
  PoolRefusals MigQuotaRefusals(const PodInfo& pod) override { return quotas_.MigQuotaRefusals(pod); }
  std::string MigQuotaRefusalAt(const PodInfo& pod, const NodeName& node) override {
    return quotas_.MigQuotaRefusalAt(pod, node);
  }
  void RecordUncountedMig(const PodInfo& pod, const NodeName& node) override { quotas_.RecordUncountedMig(pod, node); }
  scheduling::GangRequest EngineRequestOf(const GangRecord& g, int members) const override;

 private:
  struct PlannedEviction;  // admission.cc: a victim gang a pass chose
  struct Plan;             // admission.cc: what one pass decided
  class Driver;            // admission.cc: the ledger as the engine's (read-only) driver

  // --- the pass (admission.cc) ---
  // Pass under the shared lock, each admission committed by CommitAdmission under the
  // exclusive lock; then FinishPass (exclusive).
  void Admit(MonotonicTime now);
  void Pass(MonotonicTime now, std::shared_lock<std::shared_mutex>& shared, Plan& plan);
  // Re-checks and reserves one admission, lifts its gates; nullopt if it no longer holds.
  std::optional<std::vector<PodUid>> CommitAdmission(const GangKey& key, const std::set<PodUid>& members,
                                                     placement::GangPlan plan, MonotonicTime now);
  void FinishPass(Plan& plan);
  // Why a planned admission no longer holds on the ledger ("" = it does). Lock held.
  std::string AdmissionConflict(const GangRecord* g, const std::set<PodUid>& members,
                                const placement::GangPlan& plan) const;
  void CarryOutEviction(const PlannedEviction& e);  // exclusive lock held
  void LiftGates(const GangRecord& g);              // exclusive lock held
  const TrainingJobInfo* JobOf(const GangKey& gang) const;  // the TrainingJob its first member runs
  // Monotonic time as the engine's seconds (GangRequest::submitted, Engine::Pass).
  static double EngineSeconds(MonotonicTime t) { return std::chrono::duration<double>(t.time_since_epoch()).count(); }

  // --- gangs as the planner and the engine see them (gang_planning.cc) ---
  std::optional<int> EffectiveMin(const GangRecord& g, MonotonicTime now) const;
  placement::GangSpec SpecOf(const GangRecord& g, int members) const;
  std::string TryPlanOnce(GangRecord& g, MonotonicTime now, bool* over_quota);  // TryPlan without the count
  // The cluster as a gang of priority `priority` may plan on it: the ledger's state, minus the
  // GPUs that pending higher-priority pods were nominated to by kube-scheduler's preemption
  // (nullopt = no such pod; plan on the ledger's state itself).
  std::optional<placement::ClusterState> StateWithNominatedHolds(const placement::ClusterState& base,
                                                                int priority) const;
  std::string PoolOf(const GangRecord& g) const;  // the capacity pool a running gang holds GPUs in

  // --- ungated gangs in kube-scheduler's unschedulable queue (gang_requeue.cc) ---
  // Plans complete ungated gangs refused at filter and touches their waiting members.
  void RequeueUngatedGangs(MonotonicTime now);  // takes the ledger lock
  bool RequeueDue(const GangRecord& g, MonotonicTime now) const;  // ledger lock held

  VerbHandle& h_;  // config, clock, counters, the ledger lock and the Ledger
  WriteHandle writes_;
  scheduling::Engine& engine_;  // the Extender's; changed under the admission lock + ledger lock
  Disruptions& disruptions_;
  QueueQuotas& quotas_;

  // Guarded by the admission lock:
  std::map<GangKey, int> engine_waiting_;          // gangs queued in engine_ -> size
  std::set<GangKey> engine_running_;               // gangs engine_ admitted or adopted
  // ... of those, the ones a member of which a pass saw bound (spec.nodeName set): their end
  // is a run's end (Engine::OnEnded calibrates expected run times), not a plan dropped
  // before anything bound.
  std::set<GangKey> engine_ran_;
  uint64_t release_epoch_seen_ = ~uint64_t{0};     // ledger release epoch at the last pass
  MonotonicTime last_full_pass_{};
  std::map<GangKey, std::string> engine_queue_of_;        // queue each engine gang was given
  std::map<GangKey, std::pair<int, int>> requeue_tried_;  // (members, min) planned at tick
  std::map<PodUid, MonotonicTime> requeued_;              // member -> plan it was touched for
  std::function<void()> hook_for_test_;
};

}  // namespace phalanx::extender
