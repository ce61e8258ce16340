// The state of one engine pass (engine.h), shared by the Engine and its parts while the
// pass runs: the driver, the pools' heads as promised so far, memos and budgets. Internal
// to core/scheduling.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/scheduling/engine/backfill.h"
#include "core/scheduling/engine/internal.h"
#include "core/scheduling/engine/state.h"

namespace phalanx::scheduling {

class AdmissionOrder;
struct FitSlotSnap;

struct PassContext {
  double now = 0;
  EngineDriver& driver;
  // What waits ahead of a gang (read-only: the preemption's wait estimates).
  const AdmissionOrder& order;
  PassScope scope = PassScope::kFull;
  std::map<std::string, HeadPlan> heads;
  // (queue, gpus per member, milli, level) -> fewest members that failed to plan: free
  // GPUs only shrink within a pass (until an eviction, which clears it).
  std::map<std::tuple<std::string, int, int, std::string>, int> failed;
  std::map<std::string, int> searches;  // cost-rule preemption searches per queue
  std::map<std::string, int> ahead_waiting;  // per queue: GPUs of gangs walked that still wait
  int ahead_all = 0;
  // (pool, gpus per member, members) whose head replay found no expected start this pass.
  std::set<std::tuple<std::string, int, int>> unreachable;
  // Per queue: cumulative GPUs of the waiting gangs in order, at the pass's start.
  std::map<std::string, std::vector<std::pair<OrderKey, int>>> ahead;
  // ... or from the per-pool sums as they were after this change (AdmissionOrder::change_seq).
  std::map<std::string, uint64_t> ahead_since;
  // Team queues: (queue, pool) -> fewest GPUs a queue reclaim could not make room for,
  // valid while no gang was evicted (stats().preemptions unchanged).
  std::map<std::pair<int, std::string>, int> reclaim_failed;
  uint64_t reclaim_epoch = 0;
  std::map<std::string, int> reclaim_searches;  // per pool, bounded like cost-rule searches
  // Reasons are formatted once per distinct text a pass gives (thousands of waiting gangs
  // share a handful): QueueLedger::Explain by (queue, pool, milli-GPUs) while the ledger
  // is unchanged (`explained_version`), and the "does not fit" / "behind the head" texts by
  // what they say (ReasonKey).
  std::unordered_map<std::tuple<int, int, Milli>, std::string, internal::TupleHash> explained;
  uint64_t explained_version = ~uint64_t{0};
  std::unordered_map<internal::ReasonKey, std::string, internal::ReasonKeyHash> reasons;
  // Set when a gang's queue had no quota room for it (TryGang returned at QuotaFor).
  bool quota_refused = false;
  // Gangs that cannot start (admission_order_fit.cc).
  std::vector<std::pair<uint64_t, int>> fit_free;  // per slot: (fit step, its pool's free GPUs)
  // Per slot: the last snapshot and what it was taken with (forecast version, head, starts,
  // evictions).
  std::vector<std::pair<std::tuple<uint64_t, bool, uint64_t, uint64_t>, std::shared_ptr<const FitSlotSnap>>> fit_snaps;
};

}  // namespace phalanx::scheduling
