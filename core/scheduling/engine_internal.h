// Internal to core/scheduling: what the engine's translation units share (engine.cc:
// the pass; engine_heads.cc: heads and backfill room; engine_preemption.cc: victims,
// prices, evictions). Not part of the module's interface.
#pragma once

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/scheduling/engine.h"

namespace phalanx::scheduling::internal {

inline constexpr double kDay = 86400;
// How long past its notice a gracefully preempted gang may take before its preemptor
// stops waiting for it (and may choose other victims).
inline constexpr double kEvictionGrace = 60;

inline std::string Duration(double seconds) {
  if (!std::isfinite(seconds)) return "never";
  if (seconds < 90) return fmt::format("{:.0f}s", seconds);
  if (seconds < 5400) return fmt::format("{:.0f}m", seconds / 60);
  if (seconds < 2 * kDay) return fmt::format("{:.1f}h", seconds / 3600);
  return fmt::format("{:.1f}d", seconds / kDay);
}

// The planner's view of a gang in `pool` ("" = any pool); a topology level the cluster
// does not label is ignored (the gang is placed anywhere in its pool).
inline placement::GangSpec SpecOf(const GangRequest& g, const std::string& pool, const placement::ClusterState& state) {
  placement::GangSpec spec;
  spec.key = g.key;
  spec.members = g.members;
  spec.gpus_per_member = g.gpus_per_member;
  if (!pool.empty()) spec.pool = pool;
  if (g.mode != placement::TopologyMode::kNone && state.LevelIndex(g.level) >= 0) {
    spec.level = g.level;
    spec.mode = g.mode;
  }
  return spec;
}

// The reason of a gang that waits without being its pool's head (the pass tried it): behind
// that head, or not fitting; its expected wait; `suffix`: what a preemption attempt found.
inline std::string WaitReason(const std::string& pool, const GangKey* head, double head_start, int gpus, int free_now,
                              double wait, double now, std::string_view suffix) {
  if (head != nullptr) {
    return fmt::format("behind the head of pool {} ({}, expected start in {}); expected wait {}{}", pool, head->str(),
                       Duration(head_start - now), Duration(wait), suffix);
  }
  return fmt::format("does not fit now ({} GPUs, {} free); expected wait {}{}", gpus, free_now, Duration(wait), suffix);
}

// Hash of small tuples of integers (memo keys).
struct TupleHash {
  template <typename... T>
  size_t operator()(const std::tuple<T...>& t) const {
    size_t h = 0;
    std::apply([&](const auto&... v) { ((h = h * 1000003u ^ std::hash<std::decay_t<decltype(v)>>{}(v)), ...); }, t);
    return h;
  }
};

// What a waiting gang's "does not fit now" (head == nullptr) or "behind the head of pool"
// reason says, without a preemption note: the same key is the same text within a pass.
struct ReasonKey {
  const void* head = nullptr;  // the pool's head plan (fixed once set within a pass)
  int gpus = 0;
  int free_now = 0;
  double wait = 0;
  bool operator==(const ReasonKey&) const = default;
};
struct ReasonKeyHash {
  size_t operator()(const ReasonKey& k) const {
    return TupleHash{}(std::make_tuple(reinterpret_cast<uintptr_t>(k.head), k.gpus, k.free_now, k.wait));
  }
};

}  // namespace phalanx::scheduling::internal

namespace phalanx::scheduling {

// State of one pass: the pools' heads as promised so far, shape memo, budgets.
struct Engine::PassContext {
  double now = 0;
  EngineDriver& driver;
  Scope scope = Scope::kFull;
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
  // ... or from the per-pool sums as they were after this change (Engine::fit_changes_).
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
  // Gangs that cannot start (engine_fit_skip.cc).
  std::vector<std::pair<uint64_t, int>> fit_free;  // per slot: (fit step, its pool's free GPUs)
  // Per slot: the last snapshot and what it was taken with (forecast version, head, starts,
  // evictions).
  std::vector<std::pair<std::tuple<uint64_t, bool, uint64_t, uint64_t>, std::shared_ptr<const FitSlotSnap>>> fit_snaps;
};

}  // namespace phalanx::scheduling
