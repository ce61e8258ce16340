// The scheduling engine (docs/algorithms.md, "Scheduling engine"): which waiting gang
// runs next, where, and whom to preempt for it. One object, two drivers: the extender
// (extender/admission/admission.cc) drives it from its ledger, the simulator (sim/policy/
// phalanx_policy.cc) from its event queue; both call Pass() and apply what the engine
// asks through EngineDriver. Nothing here reads a clock or does I/O.
//
// Each pass, per queue (a capacity pool, or "" for gangs that take any pool), gangs are
// walked in order: priority (highest first), then first submission (a preempted gang
// keeps its place). For each gang:
//   1. It fits now (PlanGang; one-GPU shares: PickBestNode) and nothing reserved stands
//      in its way -> admitted.
//   2. It does not fit, and it is the first such gang of its pool -> the pool's *head*:
//      it is promised the earliest time its GPU count is expected free (its shadow
//      time, release_forecast.h). Later gangs may still run meanwhile (backfill) if
//        (a) their expected end (duration hint, else the tier default) is before it, or
//        (b) they fit in the GPUs the head will not need at that time, or
//        (c) they checkpoint and their tier allows preemptible backfill (spot): the head
//            reclaims them, whole gangs, the moment they are all it still lacks.
//   3. It does not fit and its expected wait exceeds its tier's target -> it may buy
//      room: ChoosePreemption over strictly lower-tier running gangs that ran at least
//      their tier's minimum run time and were not preempted too often today, ranked by
//      price (preemption_cost.h); evicted only if the benefit exceeds the cost.
// Gangs are all-or-nothing: the driver admits every member or none.
//
// With team queues configured (queues.h, docs/user-guide.md §7 "Queues and quotas") the walk is by team
// queue first: the queue whose next gang would run within its nominal quota before any
// borrower, then the lowest weighted dominant-resource share; inside a queue, the order
// above. A gang its queue has no quota room for waits (WhyWaiting names the queue); a
// gang within nominal that does not fit takes back GPUs its queue lent out (whole
// borrowing gangs of its cohort, engine/queue_reclaim.h); tier preemption across queues takes
// only borrowed capacity below QueueConfig::cross_queue_preemption_priority. Without
// queues the engine behaves exactly as without this paragraph.
//
// The Engine owns the state (engine/state.h) and the pass loop (engine_pass.cc) and
// delegates to its parts, each with its own tests: the admission order (which gang the
// walk takes next, engine/admission_order.h), backfill (heads and what may start before
// them, engine/backfill.h), tier preemption (victims, price, eviction,
// engine/tier_preemption.h) and queue reclaim (quota verdicts and reclaims,
// engine/queue_reclaim.h).
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"
#include "core/placement/cluster_state.h"
#include "core/placement/preemption.h"
#include "core/scheduling/engine/admission_order.h"
#include "core/scheduling/engine/backfill.h"
#include "core/scheduling/engine/queue_reclaim.h"
#include "core/scheduling/engine/state.h"
#include "core/scheduling/engine/tier_preemption.h"
#include "core/scheduling/engine_types.h"
#include "core/scheduling/preemption_cost.h"
#include "core/scheduling/queues.h"
#include "core/scheduling/tier_policy.h"

namespace phalanx::scheduling {

class Engine {
 public:
  // `policy` as loaded and validated by the caller (state_->policyyaml.h); one that does not
  // validate is replaced by the defaults rather than run half-understood.
  // `queues` empty: no team queues. One that does not validate leaves queues off.
  explicit Engine(EnginePolicy policy = EnginePolicy::Defaults(), QueueConfig queues = {});

  const EnginePolicy& policy() const { return state_->policy; }
  // Expected run times as learned from gangs' ends (Engine::OnEnded), and the factor the
  // engine applies to tier `tier` (EnginePolicy::tiers index) now (1 with calibration off).
  const DurationCalibration& calibration() const { return state_->calibration; }
  double DurationRatio(size_t tier, bool hinted) const { return state_->DurationRatio(tier, hinted); }
  // Replaces the team queues (the extender: GpuQueue objects changed). Running and
  // waiting gangs are re-assigned by their GangRequest::queue. InvalidArgument naming the
  // field, and nothing changes, if `queues` does not validate.
  Status SetQueues(QueueConfig queues);
  // Usage, borrowing and shares by queue (status, explain, reports).
  const QueueLedger& queues() const { return state_->ledger; }

  // --- waiting gangs -------------------------------------------------------------
  // AlreadyExists if queued or running; InvalidArgument for a malformed request.
  Status Enqueue(GangRequest gang);
  // NotFound if not queued.
  Status Remove(const GangKey& key);
  bool IsWaiting(const GangKey& key) const { return state_->waiting.contains(key); }
  size_t waiting() const { return state_->waiting.size(); }
  // Waiting gangs that wait for their victims to checkpoint and stop.
  int awaiting_victims() const { return state_->awaiting_gangs; }

  // --- running gangs -------------------------------------------------------------
  // A running gang ended or disappeared (finished, failed, deleted, evicted by someone
  // else). Unknown keys are ignored.
  void OnFinished(const GangKey& key);
  // ... and it ended by itself at `now` (completed, failed, deleted: not evicted by this
  // engine): how long it held its GPUs calibrates its tier's expected run times
  // (DurationCalibration). Then as OnFinished.
  void OnEnded(const GangKey& key, double now);
  // Registers a gang that runs without having been admitted here (found running after
  // a restart, or bound by another path), so forecasts and victim search see it.
  void AdoptRunning(const GangRequest& gang, std::string pool, std::vector<PodUid> pods, double started);
  bool IsRunning(const GangKey& key) const { return state_->running.contains(key); }
  // The eviction of a gang the engine asked to stop (EngineDriver::Evict returned > 0) was
  // refused before any of it stopped (a PodDisruptionBudget's 429 on its first member): it
  // runs on as before, a candidate victim again, with its expected end as before the
  // eviction and without the preemption on its record; its preemptor stops waiting for it
  // and searches again in a later pass. Keys not being evicted are ignored.
  void OnEvictionRefused(const GangKey& victim);
  // Whether a running gang was asked to stop and is still running.
  bool IsEvicting(const GangKey& key) const {
    auto it = state_->running.find(key);
    return it != state_->running.end() && it->second.evicting;
  }

  // --- usage the engine does not place ---------------------------------------------------
  // Work that holds GPUs the engine neither placed nor may move (the extender: pods on MIG
  // devices) counts in its queue's usage: quota checks, shares, borrowing, status. Nothing
  // else sees it: it is not running here (no release forecast, never a victim; a queue
  // reclaim or a tier preemption never picks it, though QueueLedger may list it among the
  // borrowing). `queue` as named ("" or unknown = the default queue), `amount` in
  // milli-GPUs. Booking a key again replaces its values (the same values change nothing).
  // AlreadyExists if the key waits or runs here; InvalidArgument for an empty key or an
  // amount < 0. Kept across SetQueues (counted in the new queues).
  Status BookOutside(const GangKey& key, std::string_view queue, std::string_view pool, Milli amount, int priority,
                     double started);
  void UnbookOutside(const GangKey& key);  // unknown keys are ignored
  bool IsBookedOutside(const GangKey& key) const { return state_->outside.contains(key); }
  size_t booked_outside() const { return state_->outside.size(); }

  // --- the pass ----------------------------------------------------------------------
  using Scope = PassScope;  // kFull: try every waiting gang; kArrivalsOnly: only new ones
  void Pass(double now, EngineDriver& driver, Scope scope = Scope::kFull);
  // When a pass could change something without any event (a victim's minimum run time
  // ends); nullopt: no need.
  std::optional<double> NextWake() const { return state_->next_wake; }

  // --- introspection -------------------------------------------------------------------
  // Why a waiting gang waits (last pass), "" if unknown.
  std::string WhyWaiting(const GangKey& key) const;
  std::vector<HeadReservation> Heads() const;
  // Preemptions of a job (GangRequest::job) in the 24 hours before `now`.
  int PreemptionsInDay(const std::string& job, double now) const;
  // Whether a running gang may be a cost-rule victim now, and until when not (explain);
  // nullopt if it does not run here.
  std::optional<PreemptionStanding> VictimStanding(const GangKey& key, double now) const;
  // ... of any job of `priority` whose current attempt started at `started`.
  PreemptionStanding StandingOf(const std::string& job, int priority, double started, double now) const;

  // --- preemption for the extender's preempt verb (docs/algorithms.md §8.3) ---------------
  // How long `g` (queued here or not) would wait without preempting: its GPUs plus those
  // of the gangs before it in its queue, as the pass estimates it.
  double ExpectedWait(const GangRequest& g, double now, const placement::ClusterState& state) const;
  // The engine's own choice and price (ChoosePricedPreemption) of victims among
  // `candidates` for `preemptor`, with `driver` answering work at risk and notice.
  // Candidates that are not eligible (StandingOf) or not of a strictly lower priority are
  // left out. Decision indexes and `graceful` refer to `candidates`.
  Result<PricedPreemption> QuotePreemption(const GangRequest& preemptor, double expected_wait,
                                           std::span<const VictimCandidate> candidates, double now,
                                           EngineDriver& driver,
                                           std::optional<std::set<std::string>> domains = std::nullopt,
                                           std::optional<GangKey> own_plan = std::nullopt) const;
  // A preemption decided elsewhere (the preempt verb) counts against the job's minimum
  // run and daily cap like the engine's own; `victim`, if the engine runs it, ends by that
  // preemption, so its end teaches the calibration nothing (OnEnded).
  void RecordPreemption(const std::string& job, double now, const std::optional<GangKey>& victim = std::nullopt);
  const EngineStats& stats() const { return state_->stats; }

 private:
  // --- the pass (engine_pass.cc) ---
  void TryGang(WaitingGang& w, PassContext& ctx);
  // Plans the gang on the current state; nullopt if it does not fit.
  std::optional<Admission> Place(const GangRequest& g, PassContext& ctx);
  bool Start(WaitingGang& w, Admission admission, PassContext& ctx);
  // Evicts the chosen victims (TierPreemption::Evict); starts the gang when their GPUs are
  // free now, else it waits for them (WaitingGang::awaiting). True if the gang started.
  bool EvictAndStart(WaitingGang& w, const std::optional<ChosenPreemption>& chosen, PassContext& ctx);

  // --- waiting and running gangs (engine.cc) ---
  void Forget(const GangKey& key);
  // Erases a waiting gang from the order indexes (deferred to the pass's end during one).
  void Unindex(const WaitingGang& w);
  // Records a gang as running (forecast, victim search).
  void Track(GangRequest g, std::string pool, std::vector<PodUid> pods, double started, bool reclaimable);
  void LedgerAddOutside(const GangKey& key, const OutsideBooking& o);

  // The shared state lives on the heap: the parts below point at it, and an Engine stays
  // movable. Each part owns what only it uses.
  std::unique_ptr<EngineState> state_;
  AdmissionOrder order_;         // which gang a pass walks next (engine/admission_order.h)
  Backfill backfill_;            // heads and what may start before them (engine/backfill.h)
  TierPreemption preemption_;    // victims, prices, evictions (engine/tier_preemption.h)
  QueueReclaim reclaim_;         // quota verdicts and reclaims (engine/queue_reclaim.h)
};

}  // namespace phalanx::scheduling
