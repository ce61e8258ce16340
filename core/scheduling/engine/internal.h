// Internal to core/scheduling: helpers the engine and its parts (this folder) share:
// durations in reasons, the planner's view of a gang, the texts of waiting reasons, memo
// hashes. Not part of the module's interface.
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

#include "core/placement/gang_plan.h"
#include "core/scheduling/engine_types.h"

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

