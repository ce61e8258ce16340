// Preemption choice (docs/architecture.md §3 step 7, §4 "Preemption"): which whole gangs of lower
// tiers to evict so that a higher-tier gang fits, losing as little work as possible.
//
// Rules:
//   - A victim is a whole gang (a non-gang pod is a gang of one); never part of a gang.
//   - Only victims with strictly lower priority than the preemptor are considered.
//   - Victim sets are ranked by (highest victim priority, total gpuSecondsAtRisk,
//     GPUs freed, number of victims), lowest first; with VictimRank::kCost by (highest
//     VictimGang::rank_class, total cost, GPUs freed, number of victims): candidates of
//     a lower class are tried first, so a set without a higher-class victim wins whenever
//     one exists (the engine's classes: -1 idle victims of a tier with idleVictimsFirst,
//     0 the rest, 1 victims far bigger than the need).
//   - A set is accepted only if the preemptor's gang plan really fits once the
//     victims' GPUs are released (PlanGang with PlanOptions::assume_released).
//   - The accepted set is minimised: victims whose removal keeps the plan feasible are
//     dropped (most expensive first).
//
// Search: a "scope" is where the plan must fit: each domain at the required level
// (kRequired) or each pool (otherwise). Per scope, candidates that hold GPUs there are
// added in rank order until the scope's member capacity (sum over nodes of
// floor(free / gpus_per_member), the same test PlanGang applies) reaches the gang
// size; then minimised; the best scope's set wins and the planner is run once on it
// to produce the plan. The capacity test is exact, so the final plan always fits.
//
// Bound: at most `max_candidates` victims (lowest-ranked kept) and `max_scopes` scopes
// (those with the most potential capacity first); work is
// O(max_scopes x (victims in scope) x (their pods)) capacity updates for the greedy
// pass, O(|set|^2 x pods) for minimisation (sets are small: they stop growing as soon
// as the gang fits), plus two PlanGang calls.
// Heuristic, not an exact optimum: within a scope victims are added in rank order, so
// a set ranked lower overall but needing a higher-ranked victim early may be missed;
// kPreferred/kNone gangs are checked against "fits anywhere in the pool" (the plan
// still honours the preferred level when the freed GPUs allow it).
// On 5,000 nodes see bench/core/placement/preemption_bench.cc.
//
// Pure and thread-compatible: reads a const ClusterState only.
#pragma once

#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "core/placement/cluster_state.h"
#include "core/placement/gang_plan.h"

namespace phalanx::placement {

struct VictimGang {
  GangKey key;
  int priority = 0;
  double gpu_seconds_at_risk = 0;    // TrainingJob status.preemptionCost.gpuSecondsAtRisk
  double notice_seconds_needed = 0;  // > 0: needs graceful notice (preempt-request)
  // The victim's price (core/scheduling/preemption_cost.h); ranks victims under
  // VictimRank::kCost.
  double cost = 0;
  // VictimRank::kCost: a set containing a higher class loses to any set without one.
  int rank_class = 0;
  // Every pod of the gang that holds GPUs (ClusterState allocations). Pods unknown to
  // the state are ignored. A view the caller keeps valid for the call: the engine prices
  // every running lower-tier gang per search, and copying their pods was an allocation each.
  std::span<const PodUid> pods;
};

struct PreemptionLimits {
  int max_candidates = 4096;
  int max_scopes = 1024;
};

enum class VictimRank {
  kTierThenLostWork,  // lowest tier first, then least gpu_seconds_at_risk (the extender's verb)
  kCost,              // least VictimGang::cost first, then fewest GPUs (the scheduling engine)
};

struct PreemptionRequest {
  GangSpec preemptor;
  int priority = 0;
  std::span<const VictimGang> candidates;  // any priority; lower ones are filtered here
  PreemptionLimits limits;
  // The preemptor's own reservation, if it has one (counts as free).
  std::optional<GangKey> own_plan;
  VictimRank rank = VictimRank::kTierThenLostWork;
  // kRequired only: the plan must lie in one of these domains of the spec's level (the
  // extender's preempt verb: the nodes kube-scheduler offered); nullopt = any. Fitting
  // outside them without victims does not count as fitting.
  std::optional<std::set<std::string>> domains;
};

struct PreemptionDecision {
  // Indexes into PreemptionRequest::candidates, in rank order. Empty if the gang
  // already fits without preemption.
  std::vector<int> victims;
  GangPlan plan;  // the layout the eviction enables
  double gpu_seconds_lost = 0;
  double cost = 0;  // sum of the victims' VictimGang::cost
  int gpus_freed = 0;
  int victims_needing_notice = 0;  // the extender vetoes and asks for a checkpoint
  int highest_victim_priority = 0;
};

enum class NoVictimReason {
  kNoLowerPriorityVictims,  // nothing of a lower tier holds GPUs in the pool
  kEvenAllVictimsTooFew,    // evicting every lower-tier gang still does not fit
};

struct NoVictimSet {
  NoVictimReason reason = NoVictimReason::kNoLowerPriorityVictims;
  // The preemptor's no-fit with every lower-priority candidate evicted (if computed).
  std::optional<NoFit> even_with_all;
  std::string Message() const;
};

struct PreemptionResult {
  std::optional<PreemptionDecision> decision;
  std::optional<NoVictimSet> none;
  bool helps() const { return decision.has_value(); }
};

// InvalidArgument for a malformed preemptor spec (as PlanGang).
Result<PreemptionResult> ChoosePreemption(const ClusterState& state, const PreemptionRequest& request);

}  // namespace phalanx::placement
