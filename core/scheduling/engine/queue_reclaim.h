// Team queues in the pass (docs/user-guide.md §7 "Queues and quotas"): the quota verdict
// for a waiting gang before it is placed, a queue taking back the GPUs it lent out (whole
// borrowing gangs of its cohort, when one of its gangs within nominal quota waits), and
// which victims tier preemption and head reclaim may take across queues (only borrowed
// capacity, below QueueConfig::cross_queue_preemption_priority). The walk by queue share
// is AdmissionOrder's. Only reached when queues are configured. Internal to core/scheduling.
#pragma once

#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "core/scheduling/engine/state.h"
#include "core/scheduling/engine/tier_preemption.h"

namespace phalanx::scheduling {

struct PassContext;

class QueueReclaim {
 public:
  explicit QueueReclaim(EngineState& state) : s_(&state) {}

  // The quota verdict for `w` before it is placed: nullopt = no room (w.why says why).
  // Any pool: the best verdict over the cluster's pools (the planner's pick is checked
  // again once placed).
  std::optional<QueueLedger::Fit> QuotaFor(WaitingGang& w, PassContext& ctx) const;
  // Whether tier preemption or head reclaim for `preemptor` (of queue `preemptor_team`)
  // may take `victim`: always without queues or within one queue; across queues only a
  // borrowing gang, unless the preemptor is critical.
  bool AllowsVictim(const RunningGang& victim, const GangRequest& preemptor, int preemptor_team);
  // Borrowing gangs of other queues to evict so `w`, within its queue's nominal quota,
  // runs; nullopt: none (searches spent, patience not run out, or no set makes room).
  std::optional<ChosenPreemption> Choose(WaitingGang& w, const TierPreemption& preemption, PassContext& ctx);
  // The ledger was replaced (Engine::SetQueues): its versions start again.
  void Reset();

 private:
  // Marks RunningGang::borrowing_epoch of the gangs that borrow, once per ledger version.
  void MarkBorrowing();
  // The running records of QueueLedger::ReclaimCandidates(team, pool), kept while the
  // ledger is unchanged (every change to EngineState::running is a ledger Add or Remove).
  const std::vector<const RunningGang*>& ReclaimRecords(int team, int pool);

  EngineState* s_;  // the Engine's
  uint64_t borrowing_epoch_ = 0;
  std::optional<uint64_t> borrowing_version_;
  std::map<std::pair<int, int>, std::vector<const RunningGang*>> reclaim_records_;
  std::optional<uint64_t> reclaim_records_version_;
};

}  // namespace phalanx::scheduling
