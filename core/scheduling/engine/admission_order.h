// Admission order (docs/algorithms.md §8.1): which waiting gang a pass walks next. Without
// team queues, one walk in global order (priority, then first submission); with them, the
// queues take turns (the one whose next gang runs within its nominal quota before any
// borrower, then the lowest weighted dominant-resource share), each in that order.
//
// Most of a long waiting line cannot start in a pass, and walking it gang by gang was
// nearly all of a pass's work under overload. The order skips such runs in one step and
// keeps what the skipped gangs would have been told:
//  - a run of a team queue's gangs none of which has quota room (admission_order_quota.cc);
//  - a run of gangs that cannot start: their shape does not fit and their tier neither
//    becomes a head nor preempts now (admission_order_fit.cc).
// It also answers how many GPUs wait ahead of a gang (wait estimates). Internal to
// core/scheduling; the Engine keeps it in step with its waiting gangs.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/scheduling/engine/state.h"
#include "core/scheduling/order_sums.h"

namespace phalanx::scheduling {

struct PassContext;

// Waiting gangs of one shape (admission_order_fit.cc): they fit or not, become a head or
// not, alike at a step of the walk.
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
  // As of the walk step that last classified it (AdmissionOrder's step).
  bool headable = true;         // may become its pool's head when walked
  bool passive_tried = false;   // tried, it can only wait with a "does not fit" reason
  const FitShapeKey* key = nullptr;    // its key in the order's shapes
  uint64_t classified = ~uint64_t{0};  // the step of the class below
  bool room = true;             // team queues: its queue has quota room for it
  bool within = false;          // ... within nominal (the queue walk's turn)
  // Its first gang after `order` (nullopt: none). A walk's cursor only moves forward, so
  // the answer for an earlier order stays right until it passes it: kept with the order it
  // was found for while `gangs` is unchanged (`changes`).
  std::optional<OrderKey> After(const OrderKey& order);
  uint64_t changes = 0;  // bumped by every Add and Erase of `gangs`

 private:
  OrderKey after_from_{};
  std::optional<OrderKey> after_;
  uint64_t after_changes_ = ~uint64_t{0};
};
// What a skipped run's reasons depend on, per slot: the pool's free GPUs, its head, its
// expected releases, at the time of the skip.
struct FitSlotSnap {
  int free_now = 0;
  bool behind = false;
  GangKey head;
  double head_start = 0;
  std::shared_ptr<const ReleaseForecast::Curve> curve;
};

class AdmissionOrder {
 public:
  explicit AdmissionOrder(EngineState& state) : s_(&state) {}

  // The pass's walk: calls `try_gang` for each gang to walk, in order, skipping runs of
  // gangs that cannot start (their GPUs still count as ahead of later gangs in ctx).
  void Walk(PassContext& ctx, const std::function<void(WaitingGang&)>& try_gang);
  void BeginPass(PassContext& ctx);  // after the release forecast is current
  void EndPass(PassContext& ctx);    // before gangs gone during the pass are unindexed

  // --- keeping in step with the waiting gangs ------------------------------------------
  void OnQueued(WaitingGang& w);     // w.team and w.order set; during a pass: indexed at its end
  void OnForgotten(WaitingGang& w);  // started or removed
  void MarkSeen(WaitingGang& w);     // w.fresh = false
  // The team queues change (Engine::SetQueues): reasons recorded with the old ledger are
  // written into the gangs and the queue indexes dropped; then each gang is Reindexed.
  void BeforeQueuesChange();
  void Reindex(WaitingGang& w);

  // --- what the skips recorded ---------------------------------------------------------------
  // A waiting gang's reason when the last pass skipped it (Engine::WhyWaiting).
  std::optional<std::string> SkippedReason(const WaitingGang& w) const;
  // Before a pass walks `w`: the reason it was given while skipped since it was last walked.
  std::optional<std::string> ReasonBeforeWalk(const WaitingGang& w) const;

  // --- what waits ahead -----------------------------------------------------------------------
  // GPUs of the waiting gangs before `order` that require `pool` (nullptr: every gang), as
  // they were after change `since` (change_seq(); later ones undone).
  int64_t WaitingGpusBefore(const std::string* pool, const OrderKey& order, uint64_t since) const;
  uint64_t change_seq() const { return fit_change_seq_; }
  // Gangs queued during the pass, not in the sums yet (any / requiring `pool`).
  bool HasUnindexed() const { return !fit_pending_.empty(); }
  bool HasUnindexedIn(const std::string& pool) const;

 private:
  EngineState* s_;  // the Engine's

  // --- the walks (admission_order.cc) ---
  void QueueWalk(PassContext& ctx, const std::function<void(WaitingGang&)>& try_gang);
  void GlobalWalk(PassContext& ctx, const std::function<void(WaitingGang&)>& try_gang);

  // --- gangs without quota room (admission_order_quota.cc) ---
  // Per team queue (ledger index): its waiting gangs by (required pool, milli-GPUs), each
  // in queue order. The pass's pending sums come from the counts, not a walk over every
  // waiting gang, and the walk finds the next gang that has quota room from them.
  using Shapes = std::map<std::pair<std::string, Milli>, std::set<OrderKey>>;
  std::vector<Shapes> team_shapes_;
  void IndexShape(const WaitingGang& w, bool add);
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
    uint64_t pass = 0;  // EngineStats::passes of the pass that skipped them
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
  std::optional<OrderKey> SkipNoRoomRun(int team, const WaitingGang& at, RoomCache& cache, PassContext& ctx);
  // The reason pass `pass` recorded for `w` without walking it; nullptr if it walked it.
  std::optional<std::string> SkippedWhy(const WaitingGang& w, uint64_t pass) const;
  void MaterializeSkippedWhys();
  void RollSkippedRuns();  // at a pass's start

  // --- gangs that cannot start (admission_order_fit.cc) ---
  // Most of a long queue cannot start in a pass: its shape does not fit (no free GPUs in
  // its pool, or a gang of the same shape failed to plan this pass), and its tier neither
  // becomes a head nor preempts now (with team queues: it has quota room but takes nothing
  // back); in a pass after arrivals only, every gang but the new ones and the would-be
  // heads is not even tried. Such a gang only counts its GPUs as ahead of later gangs and
  // (when tried) gets a "does not fit" reason. The walk (each team queue's cursor) skips a
  // run of them in one step: the GPUs from per-(queue, pool) sums in queue order, the
  // reasons recorded per run and formatted when asked for (WhyWaiting, the next walk).
  std::map<FitShapeKey, FitShape> fit_shapes_;
  std::vector<std::pair<int, std::string>> fit_slots_;   // (team, required pool ("" = any)), by slot
  std::vector<internal::OrderSums<OrderKey>> fit_sums_;  // by slot: GPUs of waiting gangs
  std::set<OrderKey> fresh_orders_;     // indexed gangs not walked yet (WaitingGang::fresh)
  std::vector<WaitingGang*> fit_pending_;   // queued during a pass: indexed when it ends
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
  void IndexFit(WaitingGang& w, bool add);
  // Whether the walk may skip `w` at this step.
  bool FitPassive(const WaitingGang& w, PassContext& ctx);
  // A shape's class as of this walk step (fit_step_: one per pass and per walked gang).
  void ClassifyFitShape(const FitShapeKey& key, FitShape& shape, PassContext& ctx);
  uint64_t fit_step_ = 0;
  static FitShapeKey FitKeyOf(const WaitingGang& w);
  // The first shape of a team queue's (fit_shapes_ is ordered by team first).
  std::map<FitShapeKey, FitShape>::iterator TeamShapes(int team);
  std::map<FitShapeKey, FitShape>::const_iterator TeamShapes(int team) const;
  // Skips the run of passive gangs of `at`'s queue from `at` (with team queues: as long
  // as the queue keeps the turn, i.e. its gangs' turn is `at`'s): adds their GPUs, records
  // their reasons (full pass); the next gang to walk (nullopt: none).
  // In a full pass with team queues the run also takes the queue's gangs without quota
  // room (their reasons from `room`, SkipNoRoomRun's).
  std::optional<OrderKey> SkipFitRun(const WaitingGang& at, PassContext& ctx, RoomCache* room);
  // The reason a skipped run gave `w` after it was last walked; nullopt if none.
  std::optional<std::string> FitWhy(const WaitingGang& w) const;
  std::shared_ptr<const FitSlotSnap> SnapSlot(int slot, PassContext& ctx);
  void BeginFitPass(PassContext& ctx);
  void EndFitPass(PassContext& ctx);
  void MaterializeFitWhys();
};

}  // namespace phalanx::scheduling
