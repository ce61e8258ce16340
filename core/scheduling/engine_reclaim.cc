// Team queues in the engine (docs/user-guide.md §7 "Queues and quotas"): the walk by queue share, the quota
// verdict before a gang is placed, reclaim of lent GPUs, and which victims tier
// preemption may take across queues. Only reached when queues are configured.
#include <algorithm>
#include <climits>
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
  std::map<std::pair<std::string, std::string>, Milli> pending;
  // A queue's waiting gangs keep that much of its unused quota from being lent this pass:
  // lent, it would be reclaimed as soon as they fit (a preemption per arrival). Only gangs
  // no larger than its nominal quota count: a larger one borrows anyway and must not hold
  // GPUs idle that it cannot run on.
  for (const auto& [team, gangs] : by_queue_) {
    // "Any pool" work counts where its queue has its only quota (else nowhere).
    const QueueSpec* spec = ledger_.Find(team);
    const std::string* only = spec && spec->quotas.size() == 1 ? &spec->quotas.front().pool : nullptr;
    for (const auto& [order, key] : gangs) {
      const GangRequest& g = waiting_.at(key).req;
      const std::string* pool = !g.pool.empty() ? &g.pool : only;
      if (pool != nullptr && AmountOf(g) <= ledger_.Nominal(team, *pool)) pending[{team, *pool}] += AmountOf(g);
    }
  }
  ledger_.SetPending(pending);
  struct Cursor {
    const std::string* team;
    std::vector<GangKey> keys;
    size_t next = 0;
    // Its turn as last computed, valid while the ledger and `next` are unchanged.
    uint64_t version = ~uint64_t{0};
    size_t turn_for = ~size_t{0};
    std::tuple<int, double, size_t> turn;
  };
  std::vector<Cursor> cursors;
  cursors.reserve(by_queue_.size());
  for (const auto& [team, gangs] : by_queue_) {
    Cursor& c = cursors.emplace_back(Cursor{&team, {}, 0});
    c.keys.reserve(gangs.size());
    for (const auto& [order, key] : gangs) c.keys.push_back(key);
  }
  // (0: its next gang runs within nominal, weighted share, cursor index: queues by name).
  using Turn = std::tuple<int, double, size_t>;
  auto turn_of = [&](size_t i) -> Turn {
    Cursor& c = cursors[i];
    if (c.version == ledger_.version() && c.turn_for == c.next) return c.turn;
    auto it = waiting_.find(c.keys[c.next]);
    const bool within = it != waiting_.end() && ledger_.WithinNominal(*c.team, it->second.req.pool, AmountOf(it->second.req));
    c.turn = {within ? 0 : 1, ledger_.Share(*c.team), i};
    c.version = ledger_.version();
    c.turn_for = c.next;
    return c.turn;
  };
  std::priority_queue<Turn, std::vector<Turn>, std::greater<>> turns;
  for (size_t i = 0; i < cursors.size(); ++i) turns.push(turn_of(i));
  while (!turns.empty()) {
    const Turn top = turns.top();
    turns.pop();
    const size_t i = std::get<2>(top);
    if (Turn now = turn_of(i); now != top) {
      turns.push(now);
      continue;
    }
    Cursor& c = cursors[i];
    TryGang(c.keys[c.next++], ctx);
    if (c.next < c.keys.size()) turns.push(turn_of(i));
  }
}

std::optional<QueueLedger::Fit> Engine::QuotaFor(Waiting& w, const placement::ClusterState& state) const {
  const GangRequest& g = w.req;
  const Milli amount = AmountOf(g);
  if (!g.pool.empty()) {
    const QueueLedger::Fit fit = ledger_.Check(w.team, g.pool, amount);
    if (fit != QueueLedger::Fit::kNoRoom) return fit;
    w.why = ledger_.Explain(w.team, g.pool, amount);
    return std::nullopt;
  }
  // Any pool: the best verdict over the cluster's pools (the planner's pick is checked
  // again once placed).
  std::optional<QueueLedger::Fit> best;
  std::string first_pool;
  for (placement::PoolId p = 0; p < state.PoolCount(); ++p) {
    const std::string& pool = state.pool(p).name;
    if (state.pool(p).nodes.empty()) continue;
    if (first_pool.empty() || ledger_.Nominal(w.team, pool) > ledger_.Nominal(w.team, first_pool)) first_pool = pool;
    const QueueLedger::Fit fit = ledger_.Check(w.team, pool, amount);
    if (fit != QueueLedger::Fit::kNoRoom && (!best || fit < *best)) best = fit;
  }
  if (!best) w.why = ledger_.Explain(w.team, first_pool, amount);
  return best;
}

bool Engine::QueueAllowsVictim(const GangKey& victim, const Running& r, const GangRequest& preemptor) const {
  if (!ledger_.enabled()) return true;
  if (r.team == ledger_.Resolve(preemptor.queue)) return true;
  const int critical = ledger_.config().cross_queue_preemption_priority;
  if (critical >= 0 && preemptor.priority >= critical) return true;
  if (!borrowing_) {
    const std::vector<GangKey> keys = ledger_.Borrowing();
    borrowing_.emplace(keys.begin(), keys.end());
  }
  return borrowing_->contains(victim);
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
  } else if (const QueueSpec* spec = ledger_.Find(w.team)) {
    for (const PoolQuota& q : spec->quotas)
      if (ledger_.WithinNominal(w.team, q.pool, AmountOf(g))) pools.push_back(q.pool);
  }
  const double weight = policy_.TierOf(g.priority).weight;
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
    std::vector<placement::VictimGang> candidates;
    std::vector<GangKey> keys;
    std::vector<bool> graceful;
    for (const GangKey& key : ledger_.ReclaimCandidates(w.team, pool)) {
      auto r = running_.find(key);
      if (r == running_.end() || r->second.evicting || r->second.pool != pool) continue;
      // The cost rules rank the victims and choose graceful notice where it is cheaper;
      // a reclaim does not have to pay for itself: the quota is the queue's.
      const EvictionChoice how = ChooseEviction(key, std::max(weight, policy_.TierOf(r->second.req.priority).weight), g, ctx);
      placement::VictimGang v;
      v.key = key;
      v.priority = r->second.req.priority;
      v.gpu_seconds_at_risk = how.graceful ? 0 : how.risk;
      // Lost work or the preemptor's wait, plus the victim's restart (its footprint:
      // smaller victims first).
      v.cost = (how.graceful ? how.notice_cost : weight * how.risk) +
               policy_.TierOf(v.priority).weight * (r->second.req.IsShare() ? 1 : r->second.req.Gpus()) *
                   policy_.restart_overhead_s;
      v.pods = r->second.pods;
      candidates.push_back(std::move(v));
      keys.push_back(key);
      graceful.push_back(how.graceful);
    }
    if (candidates.empty()) continue;
    ++ctx.reclaim_searches[pool];
    // Quota outranks tier: any borrowing gang may be taken back (priority above all).
    placement::PreemptionRequest req{.preemptor = SpecOf(g, pool, state), .priority = INT_MAX, .candidates = candidates};
    req.rank = placement::VictimRank::kCost;
    auto result = placement::ChoosePreemption(state, req);
    if (!result.ok() || !result->helps() || result->decision->victims.empty()) {
      auto [it, inserted] = ctx.reclaim_failed.emplace(memo, g.Gpus());
      if (!inserted) it->second = std::min(it->second, g.Gpus());
      continue;
    }
    stats_.queue_reclaims += result->decision->victims.size();
    const std::string why = fmt::format("queue {} reclaims its nominal quota of {} ({} GPUs lent out)", w.team, pool,
                                        static_cast<double>(ledger_.UsageOf(w.team, pool).lent) / kMilliGpu);
    return EvictAndStart(w, *result->decision, keys, graceful,
                         fmt::format("{} for {}: {}", kQueueReclaimReason, g.key.str(), why), why, ctx);
  }
  return false;
}

}  // namespace phalanx::scheduling
