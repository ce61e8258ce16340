// Tier preemption (docs/algorithms.md §8.3–8.4): a waiting gang whose wait exceeds its
// tier's target buys room from strictly lower-tier running gangs that ran their tier's
// minimum and were not preempted too often today, chosen and priced by the cost rule
// (ChoosePricedPreemption), evicted only when the benefit exceeds the cost; the same
// choice for a head taking back preemptible backfill and for a queue reclaim. Then the
// commit: victims evicted at once or on notice (the preemptor waits for their
// checkpoints). Owns each job's preemption history (minimum run, daily cap). Internal to
// core/scheduling; the Engine starts the preemptor once its room is free.
#pragma once

#include <deque>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/base/status.h"
#include "core/placement/preemption.h"
#include "core/scheduling/engine/state.h"
#include "core/scheduling/preemption_cost.h"

namespace phalanx::scheduling {

struct PassContext;
class AdmissionOrder;
class QueueReclaim;

// Victims chosen for a waiting gang, not evicted yet.
struct ChosenPreemption {
  placement::PreemptionDecision decision;  // victims index `keys`
  std::vector<GangKey> keys;
  std::vector<bool> graceful;  // by `keys`: evict on notice
  std::string reason;          // EngineDriver::Evict's
  std::string why;             // Admission::why
};

// What Evict did: the victims it evicted; `awaiting`: some checkpoint first, the
// preemptor waits for them (WaitingGang::awaiting), nothing starts now.
struct EvictionResult {
  std::vector<GangKey> evicted;
  bool awaiting = false;
};

class TierPreemption {
 public:
  explicit TierPreemption(EngineState& state) : s_(&state) {}

  // --- each job's history ---------------------------------------------------------------
  // Whether a gang of `job` at `priority`, started at `started`, may be a cost-rule victim
  // now, and until when not.
  PreemptionStanding StandingOf(const std::string& job, int priority, double started, double now) const;
  // The same for a gang the engine runs, its job's history found once per change of any
  // history (RunningGang::history), without the tier's name (words for `explain`): every
  // search asks it of ~170 candidates.
  PreemptionStanding StandingOf(const RunningGang& r, double now) const;
  int PreemptionsInDay(const std::string& job, double now) const;
  void Record(const std::string& job, double now);
  // The preemption recorded at `at` did not happen (the eviction was refused).
  void Unrecord(const std::string& job, double at);

  // --- quotes (the extender's preempt verb) ----------------------------------------------
  // How long `g` would wait without preempting (Engine::ExpectedWait).
  double ExpectedWait(const AdmissionOrder& order, const GangRequest& g, double now,
                      const placement::ClusterState& state) const;
  // The choice and price of victims among `candidates` (Engine::QuotePreemption).
  Result<PricedPreemption> Quote(const AdmissionOrder& order, const GangRequest& preemptor, double expected_wait,
                                 std::span<const VictimCandidate> candidates, double now, EngineDriver& driver,
                                 std::optional<std::set<std::string>> domains, std::optional<GangKey> own_plan) const;

  // --- during a pass ----------------------------------------------------------------------
  // Step 3: victims for `w`, which waited `expected_wait` (longer than its tier's target),
  // among the lower-tier gangs of its pool `queues` lets it take; nullopt: none worth it
  // (w.why says why).
  std::optional<ChosenPreemption> Choose(WaitingGang& w, double expected_wait, QueueReclaim& queues, PassContext& ctx);
  // Rule 2c: the head `w` of `pool` takes back preemptible backfill of lower tiers.
  std::optional<ChosenPreemption> ChooseBackfillReclaim(WaitingGang& w, const std::string& pool, QueueReclaim& queues,
                                                        PassContext& ctx);
  // A reclaim's victims among `records` (whole gangs in `pool`), chosen by the cost rule's
  // choice without having to pay for themselves; nullopt when no set makes room.
  std::optional<ChosenPreemption> ChooseReclaim(const GangRequest& g, const std::string& pool,
                                                std::span<const RunningGang* const> records, PassContext& ctx) const;
  // Evicts the chosen victims (records them, updates their running records, clears the
  // pass's memos that assumed their GPUs taken).
  EvictionResult Evict(WaitingGang& w, const ChosenPreemption& chosen, PassContext& ctx);

 private:
  // Quote over candidates whose engine records are known (`records[i]`: the running gang
  // candidates[i] names, or nullptr for one the engine does not run). `reclaim`: a head or
  // a queue takes back what it lent (PreemptorFacts::reclaim); the caller chose the
  // candidates, whatever their tier and standing.
  Result<PricedPreemption> Quote(const AdmissionOrder& order, const GangRequest& preemptor, double expected_wait,
                                 std::span<const VictimCandidate> candidates,
                                 std::span<const RunningGang* const> records, double now, EngineDriver& driver,
                                 std::optional<std::set<std::string>> domains, std::optional<GangKey> own_plan,
                                 bool reclaim = false) const;
  // What ExpectedWaitForFootprint finds the same for every victim of one pool in one search.
  struct FootprintMemo {
    std::optional<std::string> pool;  // nullopt: nothing yet (a copy: a described victim goes)
    ReleaseForecast::Pool releases;     // its forecast
    int free = 0;                       // the pool's free GPUs
    int released_by_back = 0;           // released by the time the preemptor ends
    bool nobody_else_waits = false;
  };
  // How long a victim, re-queued, would wait to get its GPUs back. `tracked`: a gang the
  // engine runs (the forecast holds it at its expected end).
  double ExpectedWaitForFootprint(const RunningGang& victim, bool tracked, const GangRequest& preemptor,
                                  PassContext& ctx, FootprintMemo& memo) const;

  PreemptionStanding StandingOf(const std::deque<double>* history, int priority, double started, double now,
                                bool named = true) const;

  EngineState* s_;  // the Engine's
  std::unordered_map<std::string, std::deque<double>> preempted_at_;  // job -> times
  // Bumped by every Record and Unrecord: RunningGang::history is current while equal
  // (the map's nodes, and so the pointers, stay put until then; an Engine moves, never copies).
  uint64_t history_version_ = 1;
};

}  // namespace phalanx::scheduling
