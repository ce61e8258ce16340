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
// borrowing gangs of its cohort, engine_reclaim.cc); tier preemption across queues takes
// only borrowed capacity below QueueConfig::cross_queue_preemption_priority. Without
// queues the engine behaves exactly as without this paragraph.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "core/base/status.h"
#include "core/placement/cluster_state.h"
#include "core/placement/gang_plan.h"
#include "core/placement/preemption.h"
#include "core/scheduling/order_sums.h"
#include "core/scheduling/preemption_cost.h"
#include "core/scheduling/queues.h"
#include "core/scheduling/release_forecast.h"
#include "core/scheduling/tier_policy.h"

namespace phalanx::scheduling {

// EngineDriver::Evict's reason starts with this when the victim is a borrowing gang
// evicted to give another queue its nominal quota back.
inline constexpr std::string_view kQueueReclaimReason = "queue reclaim";

struct GangRequest {
  GangKey key;          // this attempt
  std::string job;      // the same across attempts (preemption history); "" = key
  std::string pool;     // required capacity pool; "" = any one pool
  std::string queue;    // team queue (queues.h); "" or unknown = the default queue
  int priority = 0;
  int members = 1;
  int gpus_per_member = 1;
  int milli = placement::kMilliPerGpu;  // < kMilliPerGpu: a one-GPU share (members = 1)
  std::string level;                    // topology level key, with `mode`
  placement::TopologyMode mode = placement::TopologyMode::kNone;
  double submitted = 0;                 // first submission (engine seconds)
  std::optional<double> duration_hint_s;  // expected run time once started
  bool checkpoints = false;             // saves progress (may be preemptible backfill)

  int Gpus() const { return members * gpus_per_member; }
  bool IsShare() const { return milli < placement::kMilliPerGpu; }
};

enum class AdmitKind {
  kFits,                  // nothing waits ahead of it in its pool
  kBackfillEndsInTime,    // behind a head; ends before the head's expected start
  kBackfillSpareGpus,     // behind a head; uses GPUs the head will not need
  kPreemptibleBackfill,   // behind a head; reclaimed when the head is ready
  kPreempting,            // evicted lower-tier gangs to fit (cost rules or reclaim)
};

struct Admission {
  GangKey key;
  AdmitKind kind = AdmitKind::kFits;
  std::string pool;                                 // where it runs
  std::vector<placement::MemberPlacement> members;  // whole GPUs, index = member
  // The full plan (level, domain, quality) when the placement came from PlanGang.
  std::optional<placement::GangPlan> plan;
  std::optional<std::pair<NodeName, int>> share;    // a one-GPU share: node, GPU index
  std::vector<GangKey> evicted;                     // kPreempting: the victims
  std::string why;                                  // e.g. the price of the preemption
  bool backfill() const {
    return kind == AdmitKind::kBackfillEndsInTime || kind == AdmitKind::kBackfillSpareGpus ||
           kind == AdmitKind::kPreemptibleBackfill;
  }
};

class EngineDriver {
 public:
  virtual ~EngineDriver() = default;
  virtual const placement::ClusterState& state() const = 0;
  // The state `gang` is planned on: state() minus anything the driver knows is spoken for
  // ahead of it (the extender: GPUs kube-scheduler nominated to higher-priority pods).
  // Never more free GPUs in a pool than state() (a pass skips gangs that state() has no
  // room for without planning them).
  virtual const placement::ClusterState& StateFor(const GangRequest& /*gang*/) const { return state(); }
  // Start (simulator) or reserve and release (extender) the gang. The pods that hold its
  // GPUs in state() afterwards (victim search finds them there); nullopt: nothing
  // changed, the gang keeps waiting.
  virtual std::optional<std::vector<PodUid>> Admit(const GangRequest& gang, const Admission& admission) = 0;
  // Evicts a running gang, every member: at once, or `graceful`ly (asked to checkpoint
  // and stop; only for gangs with NoticeSeconds() > 0). nullopt: nothing changed. 0: its
  // GPUs are free now. > 0: it frees them within that many seconds; the driver calls
  // Engine::OnFinished when it is gone, and the preemptor waits for it meanwhile.
  virtual std::optional<double> Evict(const GangKey& victim, const GangKey& preemptor, std::string_view reason,
                                      bool graceful) = 0;
  // Work a running gang would lose if evicted at once (GPU-seconds since its last
  // checkpoint: TrainingJob status.preemptionCost.gpuSecondsAtRisk).
  virtual double GpuSecondsAtRisk(const GangKey& running) const = 0;
  // Seconds it needs to checkpoint on notice (TrainingJob checkpoint.flushSeconds); 0 =
  // it cannot, only immediate eviction.
  virtual double NoticeSeconds(const GangKey& /*running*/) const { return 0; }
  // Whether every member of a running gang is idle (the device plugin's
  // phalanx.io/idle-since on each pod). Asked only for victims whose tier sets
  // idleVictimsFirst (TierPolicy::idle_victims_first); false = busy or unknown.
  virtual bool IsIdle(const GangKey& /*running*/) const { return false; }
};

// A pool's head and what it was promised (debug state, explain).
struct HeadReservation {
  std::string pool;
  GangKey head;
  int priority = 0;
  int gpus = 0;
  int members = 0;
  double expected_start = 0;
  bool reachable = true;  // false: GPUs held by gangs without an expected end
  int spare_gpus = 0;     // left for backfill (b)
};

struct EngineStats {
  uint64_t passes = 0;
  uint64_t admitted = 0;
  uint64_t backfilled = 0;
  uint64_t preemptions = 0;         // gangs evicted
  uint64_t reclaims = 0;            // heads that took back preemptible backfill
  uint64_t preemptions_declined = 0;  // victim sets found but not worth their price
  uint64_t plan_calls = 0;
  uint64_t queue_reclaims = 0;      // borrowing gangs evicted to give a queue its nominal quota
  uint64_t overruns = 0;            // running gangs found past their expected end (re-forecast)
  uint64_t evictions_refused = 0;   // OnEvictionRefused: asked to stop, refused, running on
};

class Engine {
 public:
  // `policy` as loaded and validated by the caller (policy_yaml.h); one that does not
  // validate is replaced by the defaults rather than run half-understood.
  // `queues` empty: no team queues. One that does not validate leaves queues off.
  explicit Engine(EnginePolicy policy = EnginePolicy::Defaults(), QueueConfig queues = {});

  const EnginePolicy& policy() const { return policy_; }
  // Replaces the team queues (the extender: GpuQueue objects changed). Running and
  // waiting gangs are re-assigned by their GangRequest::queue. InvalidArgument naming the
  // field, and nothing changes, if `queues` does not validate.
  Status SetQueues(QueueConfig queues);
  // Usage, borrowing and shares by queue (status, explain, reports).
  const QueueLedger& queues() const { return ledger_; }

  // --- waiting gangs -------------------------------------------------------------
  // AlreadyExists if queued or running; InvalidArgument for a malformed request.
  Status Enqueue(GangRequest gang);
  // NotFound if not queued.
  Status Remove(const GangKey& key);
  bool IsWaiting(const GangKey& key) const { return waiting_.contains(key); }
  size_t waiting() const { return waiting_.size(); }
  // Waiting gangs that wait for their victims to checkpoint and stop.
  int awaiting_victims() const { return awaiting_gangs_; }

  // --- running gangs -------------------------------------------------------------
  // A running gang ended or disappeared (finished, failed, deleted, evicted by someone
  // else). Unknown keys are ignored.
  void OnFinished(const GangKey& key);
  // Registers a gang that runs without having been admitted here (found running after
  // a restart, or bound by another path), so forecasts and victim search see it.
  void AdoptRunning(const GangRequest& gang, std::string pool, std::vector<PodUid> pods, double started);
  bool IsRunning(const GangKey& key) const { return running_.contains(key); }
  // The eviction of a gang the engine asked to stop (EngineDriver::Evict returned > 0) was
  // refused before any of it stopped (a PodDisruptionBudget's 429 on its first member): it
  // runs on as before, a candidate victim again, with its expected end as before the
  // eviction and without the preemption on its record; its preemptor stops waiting for it
  // and searches again in a later pass. Keys not being evicted are ignored.
  void OnEvictionRefused(const GangKey& victim);
  // Whether a running gang was asked to stop and is still running.
  bool IsEvicting(const GangKey& key) const {
    auto it = running_.find(key);
    return it != running_.end() && it->second.evicting;
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
  bool IsBookedOutside(const GangKey& key) const { return outside_.contains(key); }
  size_t booked_outside() const { return outside_.size(); }

  // --- the pass ----------------------------------------------------------------------
  enum class Scope {
    kFull,          // try every waiting gang
    kArrivalsOnly,  // nothing was released since the last pass: try only new gangs
  };
  void Pass(double now, EngineDriver& driver, Scope scope = Scope::kFull);
  // When a pass could change something without any event (a victim's minimum run time
  // ends); nullopt: no need.
  std::optional<double> NextWake() const { return next_wake_; }

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
  // run and daily cap like the engine's own.
  void RecordPreemption(const std::string& job, double now);
  const EngineStats& stats() const { return stats_; }

 private:
  // Queue order: priority descending, first submission, then arrival.
  using OrderKey = std::tuple<int, double, uint64_t>;
  struct FitShape;
  struct Waiting {
    GangRequest req;
    OrderKey order;
    bool fresh = true;  // not tried since it was queued
    bool gone = false;  // started or removed during the pass that still points at it
    double since = -1;  // first pass that saw it waiting
    std::string why;
    std::vector<GangKey> awaiting;  // its victims still checkpointing (graceful preemption)
    std::string reserve_pool;       // ... in this pool
    double awaiting_until = 0;
    // Team queues on: its resolved queue (QueueLedger index) and the ledger's index of
    // req.pool (-1 until the ledger knows the pool: LedgerPoolOf looks again). Indexes
    // stay valid until SetQueues replaces the ledger and resets them.
    int team = -1;
    int ledger_pool = -1;
    uint64_t why_pass = 0;  // the pass that last walked it (else `why` may be a skipped queue's reason)
    FitShape* fit_shape = nullptr;           // its entry in fit_shapes_ (nullptr: not indexed yet)
    int fit_slot = -1;                      // fit_slots_ index of (team, req.pool)
  };
  struct Running {
    GangRequest req;
    std::string pool;  // where it runs
    std::vector<PodUid> pods;
    double started = 0;
    double expected_end = 0;
    bool reclaimable = false;  // admitted as preemptible backfill over a head
    bool evicting = false;     // asked to checkpoint and stop: no longer a candidate
    double evicted_at = 0;     // ... when (its entry in preempted_at_)
    int team = -1;             // resolved team queue (QueueLedger index; queues on)
    uint64_t borrowing_epoch = 0;  // == borrowing_epoch_: it borrows (QueueLedger::IsBorrowing)
  };
  struct PassContext;
  // A head's reservation plus what backfill (b) checks against: the pool's free GPUs per
  // node at the expected start, and how many of the head's members they hold.
  struct HeadPlan {
    HeadReservation reservation;
    int per_member = 1;
    std::vector<int> free_at_start;  // by NodeIndex; -1 = not in the head's pool
    int capacity_at_start = 0;
    bool awaiting = false;  // a preemptor waiting for its victims' checkpoints
    // True (and the GPUs counted as taken) if the head still fits at its start with
    // `admission`'s GPUs held.
    bool TakeIfStillFits(const Admission& admission, const placement::ClusterState& state);
  };
  HeadPlan PlanHead(const Waiting& w, const std::string& pool, PassContext& ctx) const;
  // Running gangs past their expected end get a new one (engine_heads.cc): a hint that
  // proved short is not trusted to end "now" pass after pass.
  void ReforecastOverdue(double now);
  HeadPlan AwaitingHead(const Waiting& w, PassContext& ctx) const;

  static OrderKey OrderOf(const GangRequest& g, uint64_t seq) { return {-g.priority, g.submitted, seq}; }
  void TryGang(Waiting& w, PassContext& ctx);
  double ExpectedDuration(const GangRequest& g) const;
  int FreeGpus(const placement::ClusterState& state, const std::string& pool) const;
  // Plans the gang on the current state; nullopt if it does not fit.
  std::optional<Admission> Place(const GangRequest& g, PassContext& ctx);
  bool Start(Waiting& w, Admission admission, PassContext& ctx);
  // Cost-rule preemption (step 3) and head reclaim (2c). True if the gang started.
  bool TryPreempt(Waiting& w, double expected_wait, PassContext& ctx);
  bool TryReclaim(Waiting& w, const std::string& pool, PassContext& ctx);
  // --- team queues (engine_reclaim.cc) ---
  // The walk by queue (share order) instead of the global order.
  void QueueWalk(PassContext& ctx);
  void GlobalWalk(PassContext& ctx);
  // The quota verdict for a gang before it is placed: nullopt = no room (w.why says why).
  std::optional<QueueLedger::Fit> QuotaFor(Waiting& w, PassContext& ctx) const;
  // Evicts other queues' borrowing gangs so `w` runs within its queue's nominal quota.
  bool TryQueueReclaim(Waiting& w, PassContext& ctx);
  // Tier preemption and head reclaim may take `victim` from `preemptor`'s queue?
  bool QueueAllowsVictim(const Running& r, const GangRequest& preemptor, int preemptor_team);
  // The ledger's index of the pool a waiting gang requires (-1: the ledger has none).
  int LedgerPoolOf(Waiting& w) const;
  // QuotePreemption over candidates whose engine records are known (`records[i]`: the
  // running gang candidates[i] names, or nullptr for one the engine does not run).
  // `reclaim`: a head or a queue takes back what it lent (PreemptorFacts::reclaim); the
  // caller chose the candidates, whatever their tier and standing.
  Result<PricedPreemption> Quote(const GangRequest& preemptor, double expected_wait,
                                 std::span<const VictimCandidate> candidates, std::span<const Running* const> records,
                                 double now, EngineDriver& driver, std::optional<std::set<std::string>> domains,
                                 std::optional<GangKey> own_plan, bool reclaim = false) const;
  static Milli AmountOf(const GangRequest& g) {
    return g.IsShare() ? g.milli : static_cast<Milli>(g.Gpus()) * kMilliGpu;
  }
  // Evicts the decision's victims; starts the gang when their GPUs are free now, else it
  // waits for them (Waiting::awaiting). True if the gang started.
  // graceful[i]: evict keys[i] gracefully.
  bool EvictAndStart(Waiting& w, const placement::PreemptionDecision& decision, const std::vector<GangKey>& keys,
                     const std::vector<bool>& graceful, const std::string& reason, const std::string& why,
                     PassContext& ctx);
  // A reclaim's victims among `records` (whole gangs in `pool`), chosen and priced by the
  // cost rule's choice; nullopt when no set makes room.
  std::optional<PricedPreemption> ChooseReclaim(const GangRequest& g, const std::string& pool,
                                                std::span<const Running* const> records, std::vector<GangKey>& keys,
                                                PassContext& ctx);
  // How long a victim, re-queued, would wait to get its GPUs back.
  double ExpectedWaitForFootprint(const Running& victim, const GangRequest& preemptor, PassContext& ctx) const;
  void Forget(const GangKey& key);
  // Erases a waiting gang from the order indexes (deferred to the pass's end during one).
  void Unindex(const Waiting& w);
  // w.awaiting changed from `was` (non-empty) to what it is: keeps awaiting_gangs_.
  void NoteAwaiting(const Waiting& w, bool was);
  // Records a gang as running (forecast, victim search).
  void Track(GangRequest g, std::string pool, std::vector<PodUid> pods, double started, bool reclaimable);
  void EraseRunning(std::map<GangKey, Running>::iterator it);

  EnginePolicy policy_;
  EngineStats stats_;
  uint64_t next_seq_ = 1;
  // Waiting gangs live on the heap so the order indexes and a pass's cursors point at
  // them without a lookup by key; one erased during a pass is kept (marked gone) until
  // the pass ends, so pointers the pass holds stay valid.
  std::unordered_map<GangKey, std::unique_ptr<Waiting>> waiting_;
  std::map<std::string, std::map<OrderKey, Waiting*>> queues_;  // by required pool ("" = any)
  std::map<OrderKey, Waiting*> order_;                           // every waiting gang
  bool in_pass_ = false;
  std::vector<std::unique_ptr<Waiting>> gone_;  // erased during this pass
  // Gangs queued at or after this sequence number joined during the pass: not walked in it.
  uint64_t pass_seq_limit_ = 0;
  std::vector<GangKey> unseen_;  // queued since the last pass (`since` and `fresh` at its end)
  int awaiting_gangs_ = 0;       // waiting gangs whose victims are still checkpointing
  std::map<GangKey, Running> running_;  // ordered: deterministic victim search
  int reclaimable_ = 0;                 // running gangs admitted as preemptible backfill
  std::unordered_map<std::string, std::deque<double>> preempted_at_;  // job -> times
  ReleaseForecast forecast_;
  std::map<std::string, HeadReservation> heads_;  // by pool, from the last pass
  std::optional<double> next_wake_;
  QueueLedger ledger_;
  std::map<std::string, std::map<OrderKey, Waiting*>> by_queue_;  // waiting, by team queue name (queues on)
  // Running gangs that borrow (IsBorrowing) carry Running::borrowing_epoch ==
  // borrowing_epoch_, marked once per ledger change (borrowing_version_).
  uint64_t borrowing_epoch_ = 0;
  std::optional<uint64_t> borrowing_version_;
  void MarkBorrowing();
  // The running records of QueueLedger::ReclaimCandidates(team, pool), kept while the
  // ledger is unchanged (every change to running_ is a ledger Add or Remove).
  const std::vector<const Running*>& ReclaimRecords(int team, int pool);
  std::map<std::pair<int, int>, std::vector<const Running*>> reclaim_records_;
  std::optional<uint64_t> reclaim_records_version_;
  // BookOutside: counted in ledger_ only (queues on), never in running_.
  struct Outside {
    std::string queue;  // as named
    std::string pool;
    Milli amount = 0;
    int priority = 0;
    double started = 0;
    bool operator==(const Outside&) const = default;
  };
  std::map<GangKey, Outside> outside_;
  void LedgerAddOutside(const GangKey& key, const Outside& o);

  // --- gangs without quota room (engine_queue_skip.cc) ---
  // Per team queue (ledger index): its waiting gangs by (required pool, milli-GPUs), each
  // in queue order. The pass's pending sums come from the counts, not a walk over every
  // waiting gang, and the walk finds the next gang that has quota room from them.
  using Shapes = std::map<std::pair<std::string, Milli>, std::set<OrderKey>>;
  std::vector<Shapes> team_shapes_;
  void IndexShape(const Waiting& w, bool add);
  // A run of a queue's gangs none of which has quota room (QueueLedger::Check is monotone
  // in the amount, and nothing changes the ledger while its gangs hold the turn) would
  // only be given that reason, gang by gang. The walk skips it in one step and records the
  // reasons per (pool, amount); WhyWaiting and the next pass's walk read them here.
  // Reasons of gangs without quota room by (pool, amount), formatted when read.
  using RefusedTexts = std::map<std::pair<std::string, Milli>, std::shared_ptr<const QueueLedger::Explanation>>;
  struct SkippedRun {
    OrderKey from, to;  // [from, to) of the queue's order; to_end: to the end
    bool to_end = false;
    uint64_t seq_limit = 0;  // gangs queued during the pass are not in it
    std::string any_pool;    // the pool an any-pool gang's reason names (as QuotaFor picks it)
    // (pool, amount) -> reason, shared by the runs skipped while the ledger was the same.
    std::shared_ptr<const RefusedTexts> texts;
  };
  struct SkippedRuns {
    uint64_t pass = 0;  // stats_.passes of the pass that skipped them
    std::vector<SkippedRun> runs;  // in queue order
  };
  // By team: this pass's (or the last one's) runs and the pass before's.
  std::vector<SkippedRuns> skipped_, skipped_before_;
  // Which of a queue's shapes have quota room, for one ledger version (a pass's cursor).
  struct RoomCache {
    uint64_t version = ~uint64_t{0};
    std::vector<const Shapes::value_type*> with_room;
    std::set<const Shapes::value_type*> without_room;
    std::string any_pool;
    std::shared_ptr<const RefusedTexts> texts;  // made at the first skip
  };
  // Brings `cache` up to the ledger's version; RoomTexts also makes its texts.
  void RefreshRoom(int team, RoomCache& cache, PassContext& ctx) const;
  void RoomTexts(int team, RoomCache& cache) const;
  // Skips the run of the queue's gangs from `at` that have no quota room; returns the first
  // gang after it (nullopt: none) or `at`'s own key when `at` has room (nothing skipped).
  std::optional<OrderKey> SkipNoRoomRun(int team, const Waiting& at, RoomCache& cache, PassContext& ctx);
  // The reason pass `pass` recorded for `w` without walking it; nullptr if it walked it.
  std::optional<std::string> SkippedWhy(const Waiting& w, uint64_t pass) const;
  void MaterializeSkippedWhys();
  void RollSkippedRuns();  // at a pass's start

  // --- gangs that cannot start (engine_fit_skip.cc) ---
  // Most of a long queue cannot start in a pass: its shape does not fit (no free GPUs in
  // its pool, or a gang of the same shape failed to plan this pass), and its tier neither
  // becomes a head nor preempts now (with team queues: it has quota room but takes nothing
  // back); in a pass after arrivals only, every gang but the new ones and the would-be
  // heads is not even tried. Such a gang only counts its GPUs as ahead of later gangs and
  // (when tried) gets a "does not fit" reason. The walk (each team queue's cursor) skips a
  // run of them in one step: the GPUs from per-(queue, pool) sums in queue order, the
  // reasons recorded per run and formatted when asked for (WhyWaiting, the next walk).
  struct FitShapeKey {
    int team = -1;  // team queue (QueueLedger index; -1: queues off)
    std::string pool;
    int gpus_per_member = 1;
    int milli = 0;
    std::string level;
    int members = 1;
    int priority = 0;
    auto operator<=>(const FitShapeKey&) const = default;
  };
  struct FitShape {
    internal::OrderSums<OrderKey> gangs;  // waiting, in queue order, with their GPUs
    int slot = -1;
    const TierPolicy* tier = nullptr;
    // As of the walk step that last classified it (fit_step_).
    bool headable = true;         // may become its pool's head when walked
    bool passive_tried = false;   // tried, it can only wait with a "does not fit" reason
    const FitShapeKey* key = nullptr;    // its key in fit_shapes_
    uint64_t classified = ~uint64_t{0};  // the fit_step_ of the class below
    bool room = true;             // team queues: its queue has quota room for it
    bool within = false;          // ... within nominal (QueueWalk's turn)
  };
  std::map<FitShapeKey, FitShape> fit_shapes_;
  std::vector<std::pair<int, std::string>> fit_slots_;   // (team, required pool ("" = any)), by slot
  std::vector<internal::OrderSums<OrderKey>> fit_sums_;  // by slot: GPUs of waiting gangs
  std::set<OrderKey> fresh_orders_;     // indexed gangs not walked yet (Waiting::fresh)
  std::set<OrderKey> awaiting_orders_;  // gangs whose victims are checkpointing (always walked)
  std::vector<Waiting*> fit_pending_;   // queued during a pass: indexed when it ends
  // Every change to fit_sums_, so a run's sums read later are those of its pass.
  struct FitChange {
    uint64_t seq = 0;
    OrderKey order;
    int slot = 0;
    int gpus = 0;  // < 0: the gang left
    Milli amount = 0;
  };
  std::deque<FitChange> fit_changes_;
  uint64_t fit_change_seq_ = 0;
  // What a skipped run's reasons depend on, per slot: the pool's free GPUs, its head, its
  // expected releases, at the time of the skip.
  struct FitSlotSnap {
    int free_now = 0;
    bool behind = false;
    GangKey head;
    double head_start = 0;
    std::shared_ptr<const ReleaseForecast::Curve> curve;
  };
  struct FitRun {
    OrderKey from, to;
    bool to_end = false;
    uint64_t change_seq = 0;  // fit_changes_ after this one came after the run
    int ahead_all = 0;        // PassContext::ahead_all at the run's start
    std::vector<int> ahead;   // ... ahead_waiting by slot
    std::vector<std::shared_ptr<const FitSlotSnap>> slots;  // by slot; null: none of its gangs in the run
    // Team queues: its gangs without quota room, by (pool, amount) (their reasons; they
    // count nothing ahead). Null: none.
    std::shared_ptr<const RefusedTexts> refused;
  };
  struct FitRuns {
    uint64_t pass = 0;  // a full pass
    double now = 0;
    uint64_t seq_limit = 0;
    std::vector<std::vector<FitRun>> runs;  // by team + 1, in queue order
  };
  // The last full pass's runs (the one in progress during a full pass) and the one before.
  FitRuns fit_runs_, fit_runs_before_;
  void IndexFit(Waiting& w, bool add);
  void SyncAwaiting(const Waiting& w);
  void MarkSeen(Waiting& w);  // w.fresh = false
  // Whether the walk may skip `w` at this step.
  bool FitPassive(const Waiting& w, PassContext& ctx);
  // A shape's class as of this walk step (fit_step_: one per pass and per walked gang).
  void ClassifyFitShape(const FitShapeKey& key, FitShape& shape, PassContext& ctx);
  uint64_t fit_step_ = 0;
  static FitShapeKey FitKeyOf(const Waiting& w);
  // The first shape of a team queue's (fit_shapes_ is ordered by team first).
  std::map<FitShapeKey, FitShape>::iterator TeamShapes(int team);
  std::map<FitShapeKey, FitShape>::const_iterator TeamShapes(int team) const;
  // Skips the run of passive gangs of `at`'s queue from `at` (with team queues: as long
  // as the queue keeps the turn, i.e. its gangs' turn is `at`'s): adds their GPUs, records
  // their reasons (full pass); the next gang to walk (nullopt: none).
  // In a full pass with team queues the run also takes the queue's gangs without quota
  // room (their reasons from `room`, SkipNoRoomRun's).
  std::optional<OrderKey> SkipFitRun(const Waiting& at, PassContext& ctx, RoomCache* room);
  // The reason a skipped run gave `w` after it was last walked; nullopt if none.
  std::optional<std::string> FitWhy(const Waiting& w) const;
  std::shared_ptr<const FitSlotSnap> SnapSlot(int slot, PassContext& ctx);
  void BeginFitPass(PassContext& ctx);
  void EndFitPass(PassContext& ctx);
  void MaterializeFitWhys();
  // GPUs of the waiting gangs before `order` that require `pool` (nullptr: every gang), as
  // they were after change `since` of fit_changes_ (later ones undone).
  int64_t WaitingGpusBefore(const std::string* pool, const OrderKey& order, uint64_t since) const;
};

}  // namespace phalanx::scheduling
