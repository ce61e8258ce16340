// Team queues in the pass (queue_reclaim.h): the quota verdict before a gang is placed,
// reclaim of lent GPUs, and which victims tier preemption may take across queues.
#include "core/scheduling/engine/queue_reclaim.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/scheduling/engine/pass_context.h"

namespace phalanx::scheduling {

std::optional<QueueLedger::Fit> QueueReclaim::QuotaFor(WaitingGang& w, PassContext& ctx) const {
  const GangRequest& g = w.req;
  const Milli amount = AmountOf(g);
  // Explain's text depends on the ledger (usage, and what waits: set at the pass start).
  if (ctx.explained_version != s_->ledger.version()) {
    ctx.explained.clear();
    ctx.explained_version = s_->ledger.version();
  }
  auto explain = [&](int pool, const std::string& name) {
    auto [it, added] = ctx.explained.try_emplace(std::make_tuple(w.team, pool, amount));
    if (added || pool < 0) it->second = s_->ledger.Explain(s_->ledger.QueueName(w.team), name, amount);
    w.why = it->second;
  };
  if (!g.pool.empty()) {
    const int pool = s_->LedgerPoolOf(w);
    const QueueLedger::Fit fit = s_->ledger.Check(w.team, pool, amount);
    if (fit != QueueLedger::Fit::kNoRoom) return fit;
    explain(pool, g.pool);
    return std::nullopt;
  }
  // Any pool: the best verdict over the cluster's pools (the planner's pick is checked
  // again once placed).
  const placement::ClusterState& state = ctx.driver.state();
  std::optional<QueueLedger::Fit> best;
  for (placement::PoolId p = 0; p < state.PoolCount(); ++p) {
    if (state.pool(p).nodes.empty()) continue;
    const QueueLedger::Fit fit = s_->ledger.Check(w.team, s_->ledger.PoolIndex(state.pool(p).name), amount);
    if (fit != QueueLedger::Fit::kNoRoom && (!best || fit < *best)) best = fit;
  }
  if (!best) {  // named only for the reason text: looked up when there is one to write
    const auto [pool, index] = s_->MostNominalPool(state, w.team);
    explain(index, pool ? *pool : std::string());
  }
  return best;
}

const std::vector<const RunningGang*>& QueueReclaim::ReclaimRecords(int team, int pool) {
  if (reclaim_records_version_ != s_->ledger.version()) {
    reclaim_records_.clear();
    reclaim_records_version_ = s_->ledger.version();
  }
  auto [it, added] = reclaim_records_.try_emplace({team, pool});
  if (!added) return it->second;
  for (const GangKey& key : s_->ledger.ReclaimCandidates(team, pool)) {
    // Every gang the ledger tracks runs here (Track/EraseRunning keep them in step).
    if (auto r = s_->running.find(key); r != s_->running.end()) it->second.push_back(&r->second);
  }
  return it->second;
}

void QueueReclaim::MarkBorrowing() {
  if (borrowing_version_ == s_->ledger.version()) return;
  ++borrowing_epoch_;
  for (const GangKey& key : s_->ledger.Borrowing())
    if (auto r = s_->running.find(key); r != s_->running.end()) r->second.borrowing_epoch = borrowing_epoch_;
  borrowing_version_ = s_->ledger.version();
}

bool QueueReclaim::AllowsVictim(const RunningGang& r, const GangRequest& preemptor, int preemptor_team) {
  if (!s_->ledger.enabled()) return true;
  if (r.team == preemptor_team) return true;
  const int critical = s_->ledger.config().cross_queue_preemption_priority;
  if (critical >= 0 && preemptor.priority >= critical) return true;
  MarkBorrowing();
  return r.borrowing_epoch == borrowing_epoch_;
}

std::optional<ChosenPreemption> QueueReclaim::Choose(WaitingGang& w, const TierPreemption& preemption,
                                                     PassContext& ctx) {
  const GangRequest& g = w.req;
  const placement::ClusterState& state = ctx.driver.state();
  if (ctx.reclaim_epoch != s_->stats.preemptions) {
    ctx.reclaim_failed.clear();
    ctx.reclaim_epoch = s_->stats.preemptions;
  }
  // Its pool's searches for this pass are spent: the next pass tries again.
  if (!g.pool.empty()) {
    auto spent = ctx.reclaim_searches.find(g.pool);
    if (spent != ctx.reclaim_searches.end() && spent->second >= s_->policy.preemption_searches_per_pass) {
      return std::nullopt;
    }
  }
  // The pools where it runs within nominal: its own, or (any pool) each it has quota in.
  std::vector<std::string> pools;
  if (!g.pool.empty()) {
    pools.push_back(g.pool);
  } else if (const QueueSpec* spec = s_->ledger.Find(s_->ledger.QueueName(w.team))) {
    for (const PoolQuota& q : spec->quotas)
      if (s_->ledger.WithinNominal(spec->name, q.pool, AmountOf(g))) pools.push_back(q.pool);
  }
  const double patience = s_->ledger.config().reclaim_after_s;
  const double waited = ctx.now - w.since;
  for (const std::string& pool : pools) {
    if (!s_->ledger.Manages(pool)) continue;  // nothing there is lent
    if (waited < patience) {
      // Running gangs are expected to free its GPUs soon enough: wait for them.
      const ReleaseForecast::Shadow s =
          s_->forecast.When(pool, g.IsShare() ? 1 : g.Gpus(), EngineState::FreeGpus(state, pool), ctx.now);
      if (s.reachable && s.start - ctx.now <= patience) {
        const double at = w.since + patience;
        s_->WakeAt(at);
        continue;
      }
    }
    const auto memo = std::make_pair(w.team, pool);
    if (auto f = ctx.reclaim_failed.find(memo); f != ctx.reclaim_failed.end() && g.Gpus() >= f->second) continue;
    // Each search scores every borrowing gang of the pool: as many per pass as cost-rule
    // preemption searches; the rest wait for the next pass.
    if (ctx.reclaim_searches[pool] >= s_->policy.preemption_searches_per_pass) continue;
    std::vector<const RunningGang*> records;
    for (const RunningGang* r : ReclaimRecords(w.team, s_->ledger.PoolIndex(pool))) {
      if (!r->evicting && r->pool == pool) records.push_back(r);
    }
    if (records.empty()) continue;
    ++ctx.reclaim_searches[pool];
    // Quota outranks tier: any borrowing gang may be taken back, chosen and priced by the
    // cost rule's choice; a reclaim does not have to pay for itself (the quota is the queue's).
    std::optional<ChosenPreemption> result = preemption.ChooseReclaim(g, pool, records, ctx);
    if (!result) {
      auto [it, inserted] = ctx.reclaim_failed.emplace(memo, g.Gpus());
      if (!inserted) it->second = std::min(it->second, g.Gpus());
      continue;
    }
    s_->stats.queue_reclaims += result->decision.victims.size();
    const std::string& team = s_->ledger.QueueName(w.team);
    const std::string why = fmt::format("queue {} reclaims its nominal quota of {} ({} GPUs lent out)", team, pool,
                                        static_cast<double>(s_->ledger.UsageOf(team, pool).lent) / kMilliGpu);
    result->reason = fmt::format("{} for {}: {}", kQueueReclaimReason, g.key.str(), why);
    result->why = why;
    return result;
  }
  return std::nullopt;
}

void QueueReclaim::Reset() {
  borrowing_version_.reset();
  reclaim_records_version_.reset();
}

}  // namespace phalanx::scheduling
