// The scheduling engine's shared state (engine.h): the waiting and running gangs and their
// indexes, the release forecast, the team-queue ledger, bookings made outside the engine,
// the counters. The Engine owns it and hands it to its parts (admission order, backfill,
// tier preemption, queue reclaim: the other headers of this folder) call by call, the way
// kube-scheduler plugins see a framework handle; what each part keeps for itself (memos,
// skip indexes, preemption history) it owns. Internal to core/scheduling.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/scheduling/duration_calibration.h"
#include "core/scheduling/engine_types.h"
#include "core/scheduling/queues.h"
#include "core/scheduling/release_forecast.h"
#include "core/scheduling/tier_policy.h"

namespace phalanx::scheduling {

// Queue order: priority descending, first submission, then arrival.
using OrderKey = std::tuple<int, double, uint64_t>;
inline OrderKey OrderOf(const GangRequest& g, uint64_t seq) { return {-g.priority, g.submitted, seq}; }
// What a gang counts in its team queue's usage.
inline Milli AmountOf(const GangRequest& g) {
  return g.IsShare() ? g.milli : static_cast<Milli>(g.Gpus()) * kMilliGpu;
}

struct FitShape;  // admission_order.h

struct WaitingGang {
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
  FitShape* fit_shape = nullptr;  // its entry in AdmissionOrder's shapes (nullptr: not indexed yet)
  int fit_slot = -1;              // AdmissionOrder's slot of (team, req.pool)
};

struct RunningGang {
  GangRequest req;
  std::string pool;  // where it runs
  std::vector<PodUid> pods;
  double started = 0;
  double expected_end = 0;
  bool reclaimable = false;  // admitted as preemptible backfill over a head
  bool adopted = false;      // AdoptRunning: its start is only when it was first seen
  bool preempted_elsewhere = false;  // the preempt verb chose it (Engine::RecordPreemption)
  bool evicting = false;     // asked to checkpoint and stop: no longer a candidate
  double evicted_at = 0;     // ... when (its entry in TierPreemption's history)
  int team = -1;             // resolved team queue (QueueLedger index; queues on)
  uint64_t borrowing_epoch = 0;  // == QueueReclaim's epoch: it borrows (QueueLedger::IsBorrowing)
  // TierPreemption's memo of its job's preemption history (nullptr: none), valid while
  // `history_version` equals TierPreemption's: found by the job's name once, not per search.
  mutable const std::deque<double>* history = nullptr;
  mutable uint64_t history_version = 0;
};

// Engine::BookOutside: counted in the ledger only (queues on), never running here.
struct OutsideBooking {
  std::string queue;  // as named
  std::string pool;
  Milli amount = 0;
  int priority = 0;
  double started = 0;
  bool operator==(const OutsideBooking&) const = default;
};

struct EngineState {
  EngineState(EnginePolicy p, QueueConfig queues) : policy(std::move(p)), ledger(std::move(queues)) {}

  EnginePolicy policy;
  EngineStats stats;
  uint64_t next_seq = 1;
  // Waiting gangs live on the heap so the order indexes and a pass's cursors point at
  // them without a lookup by key; one erased during a pass is kept (marked gone) until
  // the pass ends, so pointers the pass holds stay valid.
  std::unordered_map<GangKey, std::unique_ptr<WaitingGang>> waiting;
  using OrderIndex = std::map<OrderKey, WaitingGang*>;
  OrderIndex by_order;                           // every waiting gang
  std::map<std::string, OrderIndex> by_pool;     // by required pool ("" = any)
  std::map<std::string, OrderIndex> by_queue;    // by team queue name (queues on)
  // Each indexed gang's entries in by_order and (queues on) its queue's index, by its
  // order's sequence number: a pass's walk resumes after a skipped run at a gang it knows
  // by its order only, without searching the index (OrderAt, QueueAt).
  struct IndexEntries {
    OrderIndex::iterator in_order;
    std::optional<OrderIndex::iterator> in_queue;
  };
  std::unordered_map<uint64_t, IndexEntries> entries;
  // by_order's entry at `order`, or the first after it.
  OrderIndex::const_iterator OrderAt(const OrderKey& order) const {
    auto e = entries.find(std::get<2>(order));
    if (e != entries.end() && e->second.in_order->first == order) return e->second.in_order;
    return by_order.lower_bound(order);
  }
  // The same in `index`, team queue `team`'s (by_queue's).
  OrderIndex::const_iterator QueueAt(const OrderIndex& index, int team, const OrderKey& order) const {
    auto e = entries.find(std::get<2>(order));
    if (e != entries.end() && e->second.in_queue && (*e->second.in_queue)->first == order &&
        (*e->second.in_queue)->second->team == team) {
      return *e->second.in_queue;
    }
    return index.lower_bound(order);
  }
  bool in_pass = false;
  std::vector<std::unique_ptr<WaitingGang>> gone;  // erased during this pass
  // Gangs queued at or after this sequence number joined during the pass: not walked in it.
  uint64_t pass_seq_limit = 0;
  std::vector<GangKey> unseen;  // queued since the last pass (`since` and `fresh` at its end)
  int awaiting_gangs = 0;       // waiting gangs whose victims are still checkpointing
  std::set<OrderKey> awaiting_orders;  // ... of those the admission order indexes (always walked)
  std::map<GangKey, RunningGang> running;  // ordered: deterministic victim search
  int reclaimable = 0;                     // running gangs admitted as preemptible backfill
  ReleaseForecast forecast;
  DurationCalibration calibration;
  std::optional<double> next_wake;
  QueueLedger ledger;
  std::map<GangKey, OutsideBooking> outside;

  static bool Hinted(const GangRequest& g) { return g.duration_hint_s && *g.duration_hint_s > 0; }
  // What the gang says it runs: its hint, else its tier's default (what its end is compared with).
  double GivenDuration(const GangRequest& g) const {
    return Hinted(g) ? *g.duration_hint_s : policy.TierOf(g.priority).default_duration_s;
  }
  // The factor expectations of tier `tier` (and kind) are scaled by now: what its gangs' ends
  // showed (DurationCalibration), or 1 with EnginePolicy::calibrate_durations off.
  double DurationRatio(size_t tier, bool hinted) const {
    return policy.calibrate_durations ? calibration.Ratio(tier, hinted) : 1;
  }
  // The gang's given duration as this engine expects it to turn out.
  double ExpectedDuration(const GangRequest& g) const {
    const TierPolicy& tier = policy.TierOf(g.priority);
    const bool hinted = Hinted(g);
    return (hinted ? *g.duration_hint_s : tier.default_duration_s) * DurationRatio(TierIndex(tier), hinted);
  }
  size_t TierIndex(const TierPolicy& tier) const { return static_cast<size_t>(&tier - policy.tiers.data()); }
  static int FreeGpus(const placement::ClusterState& state, const std::string& pool) {
    if (pool.empty()) return state.FreeGpus();
    const placement::PoolId id = state.FindPool(pool);
    return id == placement::kNoPool ? 0 : state.pool(id).free_gpus;
  }
  // A pass is due by `t` at the latest (Engine::NextWake).
  void WakeAt(double t) { next_wake = next_wake ? std::min(*next_wake, t) : t; }
  // The ledger's index of the pool a waiting gang requires (-1: the ledger has none).
  int LedgerPoolOf(WaitingGang& w) const {
    // Looked up until the ledger knows the pool; then its index is kept (SetQueues resets it).
    if (w.ledger_pool < 0) w.ledger_pool = ledger.PoolIndex(w.req.pool);
    return w.ledger_pool;
  }
  // Where an any-pool gang of `team` is said to wait when no pool has room: the pool with
  // nodes in which the team has the most nominal quota (the first one on ties, an unnamed
  // pool only when nothing else has nodes); {nullptr, -1} when no pool has nodes.
  std::pair<const std::string*, int> MostNominalPool(const placement::ClusterState& state, int team) const {
    const std::string* best = nullptr;
    int best_index = -1;
    for (placement::PoolId p = 0; p < state.PoolCount(); ++p) {
      if (state.pool(p).nodes.empty()) continue;
      const std::string& pool = state.pool(p).name;
      const int index = ledger.PoolIndex(pool);
      if (best == nullptr || best->empty() || ledger.Nominal(team, index) > ledger.Nominal(team, best_index)) {
        best = &pool;
        best_index = index;
      }
    }
    return {best, best_index};
  }
  // w.awaiting changed from `was` (non-empty) to what it is: keeps awaiting_gangs and
  // awaiting_orders.
  void NoteAwaiting(const WaitingGang& w, bool was) {
    if (was && w.awaiting.empty()) --awaiting_gangs;
    if (!was && !w.awaiting.empty()) ++awaiting_gangs;
    SyncAwaiting(w);
  }
  void SyncAwaiting(const WaitingGang& w) {
    if (w.awaiting.empty()) {
      awaiting_orders.erase(w.order);
    } else if (w.fit_shape != nullptr) {
      awaiting_orders.insert(w.order);
    }
  }
  // A running gang is gone (finished, evicted at once): out of the forecast and the ledger.
  // Every ledger change bumps QueueLedger::version(), which QueueReclaim's caches key on.
  void EraseRunning(std::map<GangKey, RunningGang>::iterator it) {
    if (it->second.reclaimable) --reclaimable;
    forecast.Remove(it->first);
    if (ledger.enabled()) ledger.Remove(it->first);
    running.erase(it);
  }
};

}  // namespace phalanx::scheduling
