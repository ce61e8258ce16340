// Team queues in the engine (docs/user-guide.md §7 "Queues and quotas"): the walk by queue share, the quota
// verdict before a gang is placed, reclaim of lent GPUs, and which victims tier
// preemption may take across queues. Only reached when queues are configured.
#include <algorithm>
#include <queue>

#include <fmt/format.h>

#include "core/placement/preemption.h"
#include "core/scheduling/engine.h"
#include "core/scheduling/engine_internal.h"

namespace phalanx::scheduling {

using namespace internal;  // NOLINT: this module's own helpers

// Queues take turns: each step serves the queue whose next gang runs within its nominal
// quota (before any borrower), then the lowest weighted dominant share, then the name.
// A queue's key changes only when one of its gangs starts or is evicted; keys are
// re-checked when popped (a reclaim lowers another queue's share) instead of re-heaped.
void Engine::QueueWalk(PassContext& ctx) {
  const placement::ClusterState& state = ctx.driver.state();
  for (placement::PoolId p = 0; p < state.PoolCount(); ++p) {
    ledger_.SetCapacity(state.pool(p).name, static_cast<Milli>(state.pool(p).total_gpus) * kMilliGpu);
  }
  // A queue's cursor walks its index in place (entries of gangs that start stay until the
  // pass ends; gangs queued during the pass wait for the next one).
  using Index = std::map<OrderKey, Waiting*>;
  struct Cursor {
    int team;
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
  const uint64_t limit = pass_seq_limit_;
  auto settle = [limit](Cursor& c) {
    while (c.it != c.end && std::get<2>(c.it->first) >= limit) ++c.it;
  };
  std::vector<Cursor> cursors;
  cursors.reserve(by_queue_.size());
  // Each queue's pending work from its counts by (pool, amount), not a walk over its gangs.
  // A queue's waiting gangs keep that much of its unused quota from being lent this pass:
  // lent, it would be reclaimed as soon as they fit (a preemption per arrival). Only gangs
  // no larger than its nominal quota count: a larger one borrows anyway and must not hold
  // GPUs idle that it cannot run on.
  std::vector<std::tuple<int, int, Milli>> pending;
  std::vector<Milli> sums;  // of one queue, by ledger pool index
  for (const auto& [team, gangs] : by_queue_) {
    const int q = gangs.begin()->second->team;  // never empty: emptied queues are erased
    Cursor& c = cursors.emplace_back(Cursor{q, gangs.begin(), gangs.end()});
    settle(c);
    // "Any pool" work counts where its queue has its only quota (else nowhere).
    const QueueSpec* spec = ledger_.Find(team);
    const int only = spec && spec->quotas.size() == 1 ? ledger_.PoolIndex(spec->quotas.front().pool) : -1;
    sums.assign(sums.size(), 0);
    // Shapes emptied since the last pass go now (a pass's room caches point at them).
    std::erase_if(team_shapes_[static_cast<size_t>(q)], [](const auto& e) { return e.second.empty(); });
    for (const auto& [shape, gangs_of_shape] : team_shapes_[static_cast<size_t>(q)]) {
      const auto& [required, amount] = shape;
      const auto count = static_cast<Milli>(gangs_of_shape.size());
      const int pool = !required.empty() ? ledger_.PoolIndex(required) : only;
      if (pool < 0) continue;
      if (amount > ledger_.Nominal(q, pool)) continue;
      if (static_cast<size_t>(pool) >= sums.size()) sums.resize(static_cast<size_t>(pool) + 1, 0);
      sums[static_cast<size_t>(pool)] += amount * count;
    }
    for (size_t p = 0; p < sums.size(); ++p)
      if (sums[p] > 0) pending.emplace_back(q, static_cast<int>(p), sums[p]);
  }
  ledger_.SetPendingByIndex(pending);
  // (0: its next gang runs within nominal, weighted share, cursor index: queues by name).
  using Turn = std::tuple<int, double, size_t>;
  auto turn_of = [&](size_t i) -> Turn {
    Cursor& c = cursors[i];
    if (c.version == ledger_.version() && c.turn_for == c.next) return c.turn;
    Waiting& w = *c.it->second;
    bool within = false;
    if (!w.gone) {
      within = w.req.pool.empty()
                   ? ledger_.WithinNominalOfAnyPool(c.team, AmountOf(w.req))
                   : ledger_.Check(c.team, LedgerPoolOf(w), AmountOf(w.req)) == QueueLedger::Fit::kWithinNominal;
    }
    c.turn = {within ? 0 : 1, ledger_.Share(c.team), i};
    c.version = ledger_.version();
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
    if (c.refused && awaiting_gangs_ == 0) {
      c.refused = false;
      const OrderKey at = c.it->first;
      const std::optional<OrderKey> next = SkipNoRoomRun(c.team, *c.it->second, c.room, ctx);
      if (!next || *next != at) {
        const Index& gangs = by_queue_.find(ledger_.QueueName(c.team))->second;
        c.it = next ? gangs.lower_bound(*next) : c.end;
        ++c.next;
        settle(c);
        if (c.it != c.end) turns.push(turn_of(i));
        continue;
      }
    }
    Waiting& w = *c.it->second;
    // A run of its gangs that cannot start, with the same turn, in one step (engine_fit_skip.cc).
    if (FitPassive(w, ctx)) {
      if (static_cast<size_t>(c.team) < team_shapes_.size()) RefreshRoom(c.team, c.room, ctx);
      const std::optional<OrderKey> next = SkipFitRun(w, ctx, &c.room);
      const Index& gangs = by_queue_.find(ledger_.QueueName(c.team))->second;
      c.it = next ? gangs.lower_bound(*next) : c.end;
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
    TryGang(w, ctx);
    ++fit_step_;
    c.refused = ctx.quota_refused;
    if (c.it != c.end) turns.push(turn_of(i));
  }
}

int Engine::LedgerPoolOf(Waiting& w) const {
  // Looked up until the ledger knows the pool; then its index is kept (SetQueues resets it).
  if (w.ledger_pool < 0) w.ledger_pool = ledger_.PoolIndex(w.req.pool);
  return w.ledger_pool;
}

std::optional<QueueLedger::Fit> Engine::QuotaFor(Waiting& w, PassContext& ctx) const {
  const GangRequest& g = w.req;
  const Milli amount = AmountOf(g);
  // Explain's text depends on the ledger (usage, and what waits: set at the pass start).
  if (ctx.explained_version != ledger_.version()) {
    ctx.explained.clear();
    ctx.explained_version = ledger_.version();
  }
  auto explain = [&](int pool, const std::string& name) {
    auto [it, added] = ctx.explained.try_emplace(std::make_tuple(w.team, pool, amount));
    if (added || pool < 0) it->second = ledger_.Explain(ledger_.QueueName(w.team), name, amount);
    w.why = it->second;
  };
  if (!g.pool.empty()) {
    const int pool = LedgerPoolOf(w);
    const QueueLedger::Fit fit = ledger_.Check(w.team, pool, amount);
    if (fit != QueueLedger::Fit::kNoRoom) return fit;
    explain(pool, g.pool);
    return std::nullopt;
  }
  // Any pool: the best verdict over the cluster's pools (the planner's pick is checked
  // again once placed).
  const placement::ClusterState& state = ctx.driver.state();
  std::optional<QueueLedger::Fit> best;
  const std::string* first_pool = nullptr;
  int first_index = -1;
  for (placement::PoolId p = 0; p < state.PoolCount(); ++p) {
    const std::string& pool = state.pool(p).name;
    if (state.pool(p).nodes.empty()) continue;
    const int index = ledger_.PoolIndex(pool);
    if (first_pool == nullptr || first_pool->empty() ||
        ledger_.Nominal(w.team, index) > ledger_.Nominal(w.team, first_index)) {
      first_pool = &pool;
      first_index = index;
    }
    const QueueLedger::Fit fit = ledger_.Check(w.team, index, amount);
    if (fit != QueueLedger::Fit::kNoRoom && (!best || fit < *best)) best = fit;
  }
  if (!best) explain(first_index, first_pool ? *first_pool : std::string());
  return best;
}

const std::vector<const Engine::Running*>& Engine::ReclaimRecords(int team, int pool) {
  if (reclaim_records_version_ != ledger_.version()) {
    reclaim_records_.clear();
    reclaim_records_version_ = ledger_.version();
  }
  auto [it, added] = reclaim_records_.try_emplace({team, pool});
  if (!added) return it->second;
  for (const GangKey& key : ledger_.ReclaimCandidates(team, pool)) {
    // Every gang the ledger tracks runs here (Track/EraseRunning keep them in step).
    if (auto r = running_.find(key); r != running_.end()) it->second.push_back(&r->second);
  }
  return it->second;
}

void Engine::MarkBorrowing() {
  if (borrowing_version_ == ledger_.version()) return;
  ++borrowing_epoch_;
  for (const GangKey& key : ledger_.Borrowing())
    if (auto r = running_.find(key); r != running_.end()) r->second.borrowing_epoch = borrowing_epoch_;
  borrowing_version_ = ledger_.version();
}

bool Engine::QueueAllowsVictim(const Running& r, const GangRequest& preemptor, int preemptor_team) {
  if (!ledger_.enabled()) return true;
  if (r.team == preemptor_team) return true;
  const int critical = ledger_.config().cross_queue_preemption_priority;
  if (critical >= 0 && preemptor.priority >= critical) return true;
  MarkBorrowing();
  return r.borrowing_epoch == borrowing_epoch_;
}

bool Engine::TryQueueReclaim(Waiting& w, PassContext& ctx) {
  const GangRequest& g = w.req;
  const placement::ClusterState& state = ctx.driver.state();
  if (ctx.reclaim_epoch != stats_.preemptions) {
    ctx.reclaim_failed.clear();
    ctx.reclaim_epoch = stats_.preemptions;
  }
  // Its pool's searches for this pass are spent: the next pass tries again.
  if (!g.pool.empty()) {
    auto spent = ctx.reclaim_searches.find(g.pool);
    if (spent != ctx.reclaim_searches.end() && spent->second >= policy_.preemption_searches_per_pass) return false;
  }
  // The pools where it runs within nominal: its own, or (any pool) each it has quota in.
  std::vector<std::string> pools;
  if (!g.pool.empty()) {
    pools.push_back(g.pool);
  } else if (const QueueSpec* spec = ledger_.Find(ledger_.QueueName(w.team))) {
    for (const PoolQuota& q : spec->quotas)
      if (ledger_.WithinNominal(spec->name, q.pool, AmountOf(g))) pools.push_back(q.pool);
  }
  const double patience = ledger_.config().reclaim_after_s;
  const double waited = ctx.now - w.since;
  for (const std::string& pool : pools) {
    if (!ledger_.Manages(pool)) continue;  // nothing there is lent
    if (waited < patience) {
      // Running gangs are expected to free its GPUs soon enough: wait for them.
      const ReleaseForecast::Shadow s = forecast_.When(pool, g.IsShare() ? 1 : g.Gpus(), FreeGpus(state, pool), ctx.now);
      if (s.reachable && s.start - ctx.now <= patience) {
        const double at = w.since + patience;
        next_wake_ = next_wake_ ? std::min(*next_wake_, at) : at;
        continue;
      }
    }
    const auto memo = std::make_pair(w.team, pool);
    if (auto f = ctx.reclaim_failed.find(memo); f != ctx.reclaim_failed.end() && g.Gpus() >= f->second) continue;
    // Each search scores every borrowing gang of the pool: as many per pass as cost-rule
    // preemption searches; the rest wait for the next pass.
    if (ctx.reclaim_searches[pool] >= policy_.preemption_searches_per_pass) continue;
    std::vector<const Running*> records;
    for (const Running* r : ReclaimRecords(w.team, ledger_.PoolIndex(pool))) {
      if (!r->evicting && r->pool == pool) records.push_back(r);
    }
    if (records.empty()) continue;
    ++ctx.reclaim_searches[pool];
    // Quota outranks tier: any borrowing gang may be taken back, chosen and priced by the
    // cost rule's choice; a reclaim does not have to pay for itself (the quota is the queue's).
    std::vector<GangKey> keys;
    std::optional<PricedPreemption> result = ChooseReclaim(g, pool, records, keys, ctx);
    if (!result) {
      auto [it, inserted] = ctx.reclaim_failed.emplace(memo, g.Gpus());
      if (!inserted) it->second = std::min(it->second, g.Gpus());
      continue;
    }
    stats_.queue_reclaims += result->decision->victims.size();
    const std::string& team = ledger_.QueueName(w.team);
    const std::string why = fmt::format("queue {} reclaims its nominal quota of {} ({} GPUs lent out)", team, pool,
                                        static_cast<double>(ledger_.UsageOf(team, pool).lent) / kMilliGpu);
    return EvictAndStart(w, *result->decision, keys, result->graceful,
                         fmt::format("{} for {}: {}", kQueueReclaimReason, g.key.str(), why), why, ctx);
  }
  return false;
}

}  // namespace phalanx::scheduling
