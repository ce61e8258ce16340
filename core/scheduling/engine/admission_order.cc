// Admission order (admission_order.h): the pass's walk, global or by team queue, and
// keeping the order's indexes in step with the waiting gangs. The skips are in
// admission_order_quota.cc (no quota room) and admission_order_fit.cc (cannot start).
#include "core/scheduling/engine/admission_order.h"

#include <algorithm>
#include <queue>

#include "core/scheduling/engine/pass_context.h"

namespace phalanx::scheduling {

void AdmissionOrder::Walk(PassContext& ctx, const std::function<void(WaitingGang&)>& try_gang) {
  if (s_->ledger.enabled()) {
    QueueWalk(ctx, try_gang);
  } else {
    GlobalWalk(ctx, try_gang);
  }
}

void AdmissionOrder::BeginPass(PassContext& ctx) {
  RollSkippedRuns();
  BeginFitPass(ctx);
}

void AdmissionOrder::EndPass(PassContext& ctx) { EndFitPass(ctx); }

void AdmissionOrder::OnQueued(WaitingGang& w) {
  if (w.team >= 0) IndexShape(w, true);
  if (s_->in_pass) {
    fit_pending_.push_back(&w);  // not walked in this pass: out of its sums
  } else {
    IndexFit(w, true);
  }
}

void AdmissionOrder::OnForgotten(WaitingGang& w) {
  if (w.team >= 0) IndexShape(w, false);
  if (w.fit_shape != nullptr) IndexFit(w, false);
}

void AdmissionOrder::BeforeQueuesChange() {
  MaterializeSkippedWhys();  // the texts were made with the old ledger
  MaterializeFitWhys();
  for (auto& [key, w] : s_->waiting)
    if (w->fit_shape != nullptr) IndexFit(*w, false);  // indexed by queue: Reindex again
  skipped_.clear();
  skipped_before_.clear();
  team_shapes_.clear();
}

void AdmissionOrder::Reindex(WaitingGang& w) {
  if (w.team >= 0) IndexShape(w, true);
  IndexFit(w, true);
}

std::optional<std::string> AdmissionOrder::SkippedReason(const WaitingGang& w) const {
  if (w.why_pass != s_->stats.passes) {
    if (std::optional<std::string> skipped = SkippedWhy(w, s_->stats.passes)) return skipped;
  }
  return FitWhy(w);
}

std::optional<std::string> AdmissionOrder::ReasonBeforeWalk(const WaitingGang& w) const {
  // Skipped by the last pass (its queue had no room): that pass's reason is its reason.
  if (w.why_pass + 1 != s_->stats.passes) {
    if (std::optional<std::string> refused = SkippedWhy(w, s_->stats.passes - 1)) return refused;
  }
  // Skipped by a full pass since it was last walked (it could not start): that reason.
  return FitWhy(w);
}

bool AdmissionOrder::HasUnindexedIn(const std::string& pool) const {
  return std::any_of(fit_pending_.begin(), fit_pending_.end(),
                     [&](const WaitingGang* w) { return !w->gone && w->req.pool == pool; });
}

void AdmissionOrder::GlobalWalk(PassContext& ctx, const std::function<void(WaitingGang&)>& try_gang) {
  // One walk in global order (priority, first submission): a gang that takes any pool
  // competes with the pool-bound ones by its place, not after them.
  // The index is walked in place: entries of gangs that start stay until the pass ends
  // (Engine::Forget), and gangs queued meanwhile wait for the next pass.
  // Runs of gangs that cannot start are skipped in one step (admission_order_fit.cc).
  EngineState::OrderIndex::const_iterator it = s_->by_order.begin();
  while (it != s_->by_order.end()) {
    WaitingGang& w = *it->second;
    if (std::get<2>(it->first) >= s_->pass_seq_limit || w.gone) {
      ++it;
      continue;
    }
    if (FitPassive(w, ctx)) {
      const std::optional<OrderKey> next = SkipFitRun(w, ctx, nullptr);
      it = next ? s_->OrderAt(*next) : s_->by_order.end();
      continue;
    }
    try_gang(w);
    ++fit_step_;
    ++it;
  }
}

// Queues take turns: each step serves the queue whose next gang runs within its nominal
// quota (before any borrower), then the lowest weighted dominant share, then the name.
// A queue's key changes only when one of its gangs starts or is evicted; keys are
// re-checked when popped (a reclaim lowers another queue's share) instead of re-heaped.
void AdmissionOrder::QueueWalk(PassContext& ctx, const std::function<void(WaitingGang&)>& try_gang) {
  const placement::ClusterState& state = ctx.driver.state();
  for (placement::PoolId p = 0; p < state.PoolCount(); ++p) {
    s_->ledger.SetCapacity(state.pool(p).name, static_cast<Milli>(state.pool(p).total_gpus) * kMilliGpu);
  }
  // A queue's cursor walks its index in place (entries of gangs that start stay until the
  // pass ends; gangs queued during the pass wait for the next one).
  using Index = std::map<OrderKey, WaitingGang*>;
  struct Cursor {
    int team;
    const Index* gangs;  // its queue's index (a queue emptied during a pass stays until its end)
    Index::const_iterator it, end;
    size_t next = 0;  // gangs walked or skipped
    // Its turn as last computed, valid while the ledger and `next` are unchanged.
    uint64_t version = ~uint64_t{0};
    size_t turn_for = ~size_t{0};
    std::tuple<int, double, size_t> turn;
    // Its last gang had no quota room (its first: look whether it has).
    bool refused = true;
    RoomCache room;
  };
  const uint64_t limit = s_->pass_seq_limit;
  auto settle = [limit](Cursor& c) {
    while (c.it != c.end && std::get<2>(c.it->first) >= limit) ++c.it;
  };
  std::vector<Cursor> cursors;
  cursors.reserve(s_->by_queue.size());
  // Each queue's pending work from its counts by (pool, amount), not a walk over its gangs.
  // A queue's waiting gangs keep that much of its unused quota from being lent this pass:
  // lent, it would be reclaimed as soon as they fit (a preemption per arrival). Only gangs
  // no larger than its nominal quota count: a larger one borrows anyway and must not hold
  // GPUs idle that it cannot run on.
  std::vector<std::tuple<int, int, Milli>> pending;
  std::vector<Milli> sums;  // of one queue, by ledger pool index
  for (const auto& [team, gangs] : s_->by_queue) {
    const int q = gangs.begin()->second->team;  // never empty: emptied queues are erased
    Cursor& c = cursors.emplace_back(Cursor{q, &gangs, gangs.begin(), gangs.end()});
    settle(c);
    // "Any pool" work counts where its queue has its only quota (else nowhere).
    const QueueSpec* spec = s_->ledger.Find(team);
    const int only = spec && spec->quotas.size() == 1 ? s_->ledger.PoolIndex(spec->quotas.front().pool) : -1;
    sums.assign(sums.size(), 0);
    // Shapes emptied since the last pass go now (a pass's room caches point at them).
    std::erase_if(team_shapes_[static_cast<size_t>(q)], [](const auto& e) { return e.second.empty(); });
    for (const auto& [shape, gangs_of_shape] : team_shapes_[static_cast<size_t>(q)]) {
      const auto& [required, amount] = shape;
      const auto count = static_cast<Milli>(gangs_of_shape.size());
      const int pool = !required.empty() ? s_->ledger.PoolIndex(required) : only;
      if (pool < 0) continue;
      if (amount > s_->ledger.Nominal(q, pool)) continue;
      if (static_cast<size_t>(pool) >= sums.size()) sums.resize(static_cast<size_t>(pool) + 1, 0);
      sums[static_cast<size_t>(pool)] += amount * count;
    }
    for (size_t p = 0; p < sums.size(); ++p)
      if (sums[p] > 0) pending.emplace_back(q, static_cast<int>(p), sums[p]);
  }
  s_->ledger.SetPendingByIndex(pending);
  // (0: its next gang runs within nominal, weighted share, cursor index: queues by name).
  using Turn = std::tuple<int, double, size_t>;
  auto turn_of = [&](size_t i) -> Turn {
    Cursor& c = cursors[i];
    if (c.version == s_->ledger.version() && c.turn_for == c.next) return c.turn;
    WaitingGang& w = *c.it->second;
    bool within = false;
    if (!w.gone) {
      within = w.req.pool.empty()
                   ? s_->ledger.WithinNominalOfAnyPool(c.team, AmountOf(w.req))
                   : s_->ledger.Check(c.team, s_->LedgerPoolOf(w), AmountOf(w.req)) == QueueLedger::Fit::kWithinNominal;
    }
    c.turn = {within ? 0 : 1, s_->ledger.Share(c.team), i};
    c.version = s_->ledger.version();
    c.turn_for = c.next;
    return c.turn;
  };
  std::priority_queue<Turn, std::vector<Turn>, std::greater<>> turns;
  for (size_t i = 0; i < cursors.size(); ++i)
    if (cursors[i].it != cursors[i].end) turns.push(turn_of(i));
  while (!turns.empty()) {
    const Turn top = turns.top();
    turns.pop();
    const size_t i = std::get<2>(top);
    if (Turn now = turn_of(i); now != top) {
      turns.push(now);
      continue;
    }
    Cursor& c = cursors[i];
    // Its gangs keep the turn while they have no quota room (nothing changes the ledger
    // meanwhile): such a run is skipped in one step, up to its next gang that has room.
    if (c.refused && s_->awaiting_gangs == 0) {
      c.refused = false;
      const OrderKey at = c.it->first;
      const std::optional<OrderKey> next = SkipNoRoomRun(c.team, *c.it->second, c.room, ctx);
      if (!next || *next != at) {
        c.it = next ? s_->QueueAt(*c.gangs, c.team, *next) : c.end;
        ++c.next;
        settle(c);
        if (c.it != c.end) turns.push(turn_of(i));
        continue;
      }
    }
    WaitingGang& w = *c.it->second;
    // A run of its gangs that cannot start, with the same turn, in one step (admission_order_fit.cc).
    if (FitPassive(w, ctx)) {
      if (static_cast<size_t>(c.team) < team_shapes_.size()) RefreshRoom(c.team, c.room, ctx);
      const std::optional<OrderKey> next = SkipFitRun(w, ctx, &c.room);
      c.it = next ? s_->QueueAt(*c.gangs, c.team, *next) : c.end;
      ++c.next;
      settle(c);
      c.refused = true;  // it may stop at a gang without room: SkipNoRoomRun looks
      if (c.it != c.end) turns.push(turn_of(i));
      continue;
    }
    ++c.it;
    ++c.next;
    settle(c);
    ctx.quota_refused = false;
    try_gang(w);
    ++fit_step_;
    c.refused = ctx.quota_refused;
    if (c.it != c.end) turns.push(turn_of(i));
  }
}

}  // namespace phalanx::scheduling
