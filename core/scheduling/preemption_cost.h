// The price of a preemption, in weighted GPU-seconds (docs/algorithms.md, "Preemption
// that pays for itself"). A preemption happens only when its benefit exceeds its cost:
//
//   benefit = w(preemptor tier) x preemptor GPUs x wait avoided
//             (wait avoided = the preemptor's expected wait without preempting,
//              capped at the policy's horizon)
//   cost    = sum over victims of
//               min( w(lost) x un-checkpointed GPU-seconds lost         (evicted at once),
//                    w(preemptor) x preemptor GPUs x checkpoint notice) (graceful)
//             + w(victim tier) x victim GPUs x (restart overhead + expected wait to get
//                                               its footprint back in its pool)
//             where w(lost) = max(w(victim tier), w(preemptor tier)): waiting is moved
//             from one gang to another, but lost work is capacity destroyed, so it is
//             valued at the higher of the two tiers.
//
// Graceful victims' notice is counted once per preemption (the longest): the preemptor
// waits for all checkpoints at the same time.
// A victim's footprint term is what makes a 256-GPU gang an expensive answer to a
// 1-GPU pod: it must wait for 256 GPUs again. Tier weights (tier_policy.h) are ~10x
// apart, so a higher tier wins unless the victims lose ~10x more than it gains.
// Pure functions; the engine feeds them forecasts (release_forecast.h).
//
// ChoosePricedPreemption is THE choice: the engine's own preemption (engine/tier_preemption.cc)
// and the extender's preempt verb (extender/verbs/preempt.cc, through Engine::QuotePreemption)
// both call it, so what kube-scheduler is offered and what the simulator applies cannot
// drift apart.
#pragma once

#include <algorithm>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "core/base/ids.h"
#include "core/base/result.h"
#include "core/placement/cluster_state.h"
#include "core/placement/preemption.h"
#include "core/scheduling/tier_policy.h"

namespace phalanx::scheduling {

struct VictimPrice {
  int gpus = 0;
  double weight = 1;
  double lost_work_weight = 1;  // max(victim's, preemptor's tier weight)
  double gpu_seconds_at_risk = 0;  // work since the last checkpoint (evicted at once)
  // Evicted gracefully instead: w(preemptor) x preemptor GPUs x the victim's notice (the
  // preemptor waits for the checkpoint); the engine picks whichever is cheaper.
  double notice_cost = 0;
  double expected_wait_s = 0;      // to get `gpus` back in its pool once re-queued
};

struct PreemptionPrice {
  double benefit = 0;
  double cost = 0;
  bool pays() const { return benefit > cost; }
  // "benefit 2.9e+06 > cost 8.6e+05 weighted GPU-s" (explain, Events, logs).
  std::string Describe() const;
};

double VictimCost(const VictimPrice& victim, double restart_overhead_s);
double PreemptionBenefit(int preemptor_gpus, double preemptor_weight, double wait_avoided_s);
PreemptionPrice PricePreemption(int preemptor_gpus, double preemptor_weight, double wait_avoided_s,
                                const std::vector<VictimPrice>& victims, double restart_overhead_s);

// --- the choice ------------------------------------------------------------------------------

// A victim much bigger than the need is chosen only when no set of victims close to the
// need makes room ("never a 256-GPU gang for a 1-GPU pod while a smaller set exists"):
// its footprint term assumes it gets its GPUs back as soon as the forecast says, but the
// GPUs it frees beyond the preemptor's need are taken by other waiting work, so in
// practice it waits far longer. Close = at most four times the need, or four 8-GPU nodes
// (a tighter bound, twice the need or one node, cost the LLM-era workload 0.9 points of
// utilisation: bench/RESULTS.md, "Scheduling policy").
inline constexpr int kCloseFootprintFactor = 4;
inline constexpr int kCloseFootprintGpus = 32;
bool CloseToNeed(int victim_gpus, int preemptor_gpus);

// One eligible candidate victim (a whole running gang, or a single pod), with everything
// its price depends on. Eligibility (minimum run time, daily cap) is decided before.
struct VictimFacts {
  GangKey key;
  int priority = 0;
  int gpus = 0;                    // its footprint (a GPU share counts as one)
  std::span<const PodUid> pods;    // that hold its GPUs in the ClusterState (kept by the caller)
  double gpu_seconds_at_risk = 0;  // lost if evicted at once
  double notice_s = 0;             // checkpoints and stops within this on notice; 0 = cannot
  double expected_wait_s = 0;      // to get its footprint back once re-queued in its place
  double remaining_s = 0;          // until its expected end
  // Every member idle (EngineDriver::IsIdle). Counts only when its tier sets
  // idleVictimsFirst: then it is priced at zero and ranked before every busy victim.
  bool idle = false;
};

struct PreemptorFacts {
  placement::GangSpec spec;
  int priority = 0;
  double expected_wait_s = 0;  // without preempting (capped at the policy's horizon)
  // Where the plan may go (kRequired level domains, e.g. the nodes kube-scheduler
  // offered); nullopt = anywhere.
  std::optional<std::set<std::string>> domains;
  std::optional<GangKey> own_plan;  // its own reservation counts as free
  // A reclaim: a pool's head taking back the preemptible backfill it let in, or a queue
  // taking back the quota it lent. Its victims are chosen and priced as above (one rule
  // everywhere), but the preemptor's tier target and the price do not gate it (what it
  // takes back was lent on that condition), and candidates of any priority may be chosen
  // (the caller decided who may be). A set that makes room is kPays; `price` says what it
  // cost.
  bool reclaim = false;
  int Gpus() const { return spec.members * spec.gpus_per_member; }
};

struct PricedPreemption {
  enum class Outcome {
    kTierNeverPreempts,  // its tier's targetWaitSeconds < 0
    kWithinTarget,       // its expected wait is within its tier's target: it queues
    kFitsAlready,        // no victim needed
    kNoVictimSet,        // no set of eligible victims makes room
    kDeclined,           // the best set costs more than it gains
    kPays,               // evict decision->victims
  };
  Outcome outcome = Outcome::kNoVictimSet;
  // kPays / kDeclined: the set (indexes into the facts) and the plan it enables.
  std::optional<placement::PreemptionDecision> decision;
  std::vector<bool> graceful;  // by facts index: evict with notice (else at once)
  PreemptionPrice price;
  std::string why;  // words for every outcome (WhyWaiting, Events, explain)
  // Filled by Engine::QuotePreemption: candidates left out by their standing, and the
  // earliest time one of them becomes eligible.
  int ineligible = 0;
  std::optional<double> next_eligible;
  bool pays() const { return outcome == Outcome::kPays; }
};

// --- eligibility and the engine's inputs -------------------------------------------------------

// Whether a job may be a cost-rule victim now (docs/algorithms.md §8.3): a job preempted
// before is not preempted again before it ran its tier's minRunSeconds in its new attempt,
// nor more than maxPreemptionsPerDay times in any 24 hours. Shown by `phalanx explain`.
struct PreemptionStanding {
  enum class Guard { kNone, kNeverByCost, kMinRun, kDailyCap };
  bool eligible = true;
  Guard guard = Guard::kNone;   // what protects it when not eligible
  double eligible_at = 0;       // not eligible: when it becomes so (+inf = never)
  int preempted_in_day = 0;     // preemptions in the 24 h before now
  int max_per_day = 0;          // its tier's cap
  double min_run_s = 0;         // its tier's minimum run
  std::string tier;
  // e.g. "preemptible after 14:05:10 UTC (min run 15m)", "preempted 1/1 today: not
  // preemptible until 09:12:00 UTC", "preemptible now (preempted 0/1 today)". Times are
  // wall-clock when `wall_now` (Unix seconds at engine time `now`) is given, else relative.
  std::string Describe(double now, std::optional<double> wall_now = std::nullopt) const;
};

// A running gang (or single pod) a caller proposes as a victim. For a gang the engine
// runs (Engine::IsRunning(key)) its own record is used and only `key` (and `pods`, if
// non-empty) matter; the other fields describe victims the engine does not know.
struct VictimCandidate {
  GangKey key;
  std::string job;  // preemption history ("" = key)
  int priority = 0;
  int gpus = 0;
  std::string pool;  // the capacity pool it holds GPUs in
  double started = 0;  // engine seconds
  std::vector<PodUid> pods;
  // Already asked to stop by this preemptor (a pending graceful preemption): its standing
  // is not checked again (choosing it again starts nothing new).
  bool leaving = false;
};

// Idle victims first (TierPolicy::idle_victims_first, off by default): a candidate with
// `idle` whose tier sets it costs nothing (no work at risk, no notice, no wait-back value:
// it is doing nothing, so nothing is lost by evicting it at once or by its waiting again)
// and is ranked in class -1, so a set of idle victims alone that makes room beats every set
// with a busy victim, and otherwise idle victims join a set before busy ones of equal
// class. Eligibility (lower priority, minRunSeconds, maxPreemptionsPerDay) is unchanged.
//
// Prices every candidate (per victim the cheaper of "at once" and "graceful"), lets
// placement::ChoosePreemption pick the cheapest set that makes room (VictimRank::kCost,
// victims close to the need first), prices that set and says whether it pays.
// InvalidArgument for a malformed preemptor spec (as PlanGang).
Result<PricedPreemption> ChoosePricedPreemption(const EnginePolicy& policy, const placement::ClusterState& state,
                                                const PreemptorFacts& preemptor,
                                                std::span<const VictimFacts> candidates);

}  // namespace phalanx::scheduling
