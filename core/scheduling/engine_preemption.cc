// Preemption that pays for itself (docs/algorithms.md §8.3–8.4): eligible victims, their
// price, the cheaper eviction per victim, asynchronous evictions, head reclaims.
#include "core/scheduling/engine.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "core/placement/preemption.h"
#include "core/scheduling/engine_internal.h"

namespace phalanx::scheduling {

using namespace internal;  // NOLINT: this module's own helpers

bool Engine::Eligible(const Running& r, double now, double* eligible_at) const {
  const TierPolicy& tier = policy_.TierOf(r.req.priority);
  if (tier.max_preemptions_per_day == 0) return false;
  auto it = preempted_at_.find(r.req.job);
  if (it == preempted_at_.end() || it->second.empty()) return true;  // never preempted: no minimum run
  if (now - r.started < tier.min_run_s) {
    *eligible_at = r.started + tier.min_run_s;
    return false;
  }
  int recent = 0;
  double oldest = std::numeric_limits<double>::infinity();
  for (double t : it->second) {
    if (t > now - kDay) {
      ++recent;
      oldest = std::min(oldest, t);
    }
  }
  if (recent >= tier.max_preemptions_per_day) {
    *eligible_at = oldest + kDay;
    return false;
  }
  return true;
}

double Engine::ExpectedWaitForFootprint(const Running& victim, const GangRequest& preemptor, PassContext& ctx) const {
  const std::string& queue = victim.req.pool;
  auto [it, inserted] = ctx.ahead.try_emplace(queue);
  if (inserted) {
    int sum = 0;
    if (auto q = queues_.find(queue); q != queues_.end()) {
      for (const auto& [o, key] : q->second) {
        const GangRequest& g = waiting_.at(key).req;
        sum += g.IsShare() ? 1 : g.Gpus();
        it->second.emplace_back(o, sum);
      }
    }
  }
  // Re-queued, the victim keeps its place (first submission): count who waits before it,
  // except the preemptor, which runs on the victim's GPUs.
  const OrderKey order = OrderOf(victim.req, 0);
  const auto& prefix = it->second;
  auto pos = std::lower_bound(prefix.begin(), prefix.end(), order,
                              [](const std::pair<OrderKey, int>& e, const OrderKey& o) { return e.first < o; });
  int ahead = pos == prefix.begin() ? 0 : std::prev(pos)->second;
  const int gpus = victim.req.IsShare() ? 1 : victim.req.Gpus();
  if (preemptor.pool == queue && OrderOf(preemptor, 0) < order) ahead = std::max(0, ahead - preemptor.Gpus());
  const int need = gpus + ahead;
  const int free_now = FreeGpus(ctx.driver.state(), victim.pool);
  const ReleaseForecast::Shadow s = forecast_.When(victim.pool, need, free_now, ctx.now, &victim.req.key);
  double wait = s.reachable ? s.start - ctx.now : std::numeric_limits<double>::infinity();
  // The preemptor gives the GPUs back when it ends; the forecast does not know it yet.
  const double back = ctx.now + ExpectedDuration(preemptor);
  const int victim_back = forecast_.ReleasedBy(victim.pool, back, ctx.now) -
                          (victim.expected_end <= back ? gpus : 0);  // it releases nothing once evicted
  if (free_now + victim_back + preemptor.Gpus() >= need) {
    wait = std::min(wait, back - ctx.now);
  }
  return std::min(wait, policy_.wait_horizon_s);
}

bool Engine::TryReclaim(Waiting& w, const std::string& pool, PassContext& ctx) {
  const GangRequest& g = w.req;
  const double head_weight = policy_.TierOf(g.priority).weight;
  std::vector<placement::VictimGang> candidates;
  std::vector<GangKey> keys;
  std::vector<bool> graceful;
  for (const auto& [key, r] : running_) {
    if (!r.reclaimable || r.evicting || r.req.priority >= g.priority || r.pool != pool) continue;
    if (!QueueAllowsVictim(key, r, g)) continue;  // team queues: only borrowed capacity
    const EvictionChoice how = ChooseEviction(key, head_weight, g, ctx);
    placement::VictimGang v;
    v.key = key;
    v.priority = r.req.priority;
    v.gpu_seconds_at_risk = how.graceful ? 0 : how.risk;
    v.cost = how.graceful ? how.notice_cost : head_weight * how.risk;
    v.pods = r.pods;
    candidates.push_back(std::move(v));
    keys.push_back(key);
    graceful.push_back(how.graceful);
  }
  if (candidates.empty()) return false;
  placement::PreemptionRequest req{.preemptor = SpecOf(g, pool, ctx.driver.state()), .priority = g.priority, .candidates = candidates};
  req.rank = placement::VictimRank::kCost;
  auto result = placement::ChoosePreemption(ctx.driver.state(), req);
  if (!result.ok() || !result->helps() || result->decision->victims.empty()) return false;
  ++stats_.reclaims;
  return EvictAndStart(w, *result->decision, keys, graceful, "reclaimed by the head of its pool",
                       "reclaimed preemptible backfill", ctx);
}

Engine::EvictionChoice Engine::ChooseEviction(const GangKey& victim, double lost_work_weight,
                                              const GangRequest& preemptor, PassContext& ctx) const {
  EvictionChoice c;
  c.risk = ctx.driver.GpuSecondsAtRisk(victim);
  const double notice = ctx.driver.NoticeSeconds(victim);
  if (notice <= 0) return c;
  c.notice_cost = policy_.TierOf(preemptor.priority).weight * preemptor.Gpus() * notice;
  c.graceful = c.notice_cost < lost_work_weight * c.risk;
  return c;
}

bool Engine::EvictAndStart(Waiting& w, const placement::PreemptionDecision& decision, const std::vector<GangKey>& keys,
                           const std::vector<bool>& graceful, const std::string& reason, const std::string& why,
                           PassContext& ctx) {
  const GangRequest& g = w.req;
  std::vector<GangKey> evicted, pending;
  double longest_notice = 0;
  for (int v : decision.victims) {
    const GangKey victim = keys[static_cast<size_t>(v)];
    const std::string job = running_.at(victim).req.job;
    const std::optional<double> notice = ctx.driver.Evict(victim, g.key, reason, graceful[static_cast<size_t>(v)]);
    if (!notice) continue;
    auto& times = preempted_at_[job];
    while (!times.empty() && times.front() <= ctx.now - kDay) times.pop_front();
    times.push_back(ctx.now);
    evicted.push_back(victim);
    ++stats_.preemptions;
    auto r = running_.find(victim);
    if (r == running_.end()) continue;  // the driver reported it gone already
    if (*notice <= 0) {
      EraseRunning(r);
      continue;
    }
    // Told to checkpoint and stop: it holds its GPUs until then.
    r->second.evicting = true;
    r->second.expected_end = ctx.now + *notice;
    forecast_.Add(victim, r->second.pool, ctx.now + *notice, r->second.req.IsShare() ? 1 : r->second.req.Gpus());
    pending.push_back(victim);
    longest_notice = std::max(longest_notice, *notice);
  }
  ctx.failed.clear();
  ctx.ahead.clear();
  if (!pending.empty()) {
    w.awaiting = std::move(pending);
    w.reserve_pool = decision.plan.pool;
    w.awaiting_until = ctx.now + longest_notice + kEvictionGrace;
    next_wake_ = next_wake_ ? std::min(*next_wake_, w.awaiting_until) : w.awaiting_until;
    w.why = fmt::format("preempted {} gang(s) ({}); waiting up to {} for {} of them to checkpoint and stop",
                        evicted.size(), why, Duration(longest_notice), w.awaiting.size());
    return false;
  }
  if (evicted.size() == decision.victims.size()) {
    Admission a;
    a.key = g.key;
    a.kind = AdmitKind::kPreempting;
    a.pool = decision.plan.pool;
    a.members = decision.plan.members;
    a.plan = decision.plan;
    a.evicted = std::move(evicted);
    a.why = why;
    return Start(w, std::move(a), ctx);
  }
  // Someone could not be evicted: the plan may not hold; place afresh.
  auto again = Place(g, ctx);
  if (!again) return false;
  again->kind = AdmitKind::kPreempting;
  again->evicted = std::move(evicted);
  again->why = why;
  return Start(w, std::move(*again), ctx);
}

bool Engine::TryPreempt(Waiting& w, double expected_wait, PassContext& ctx) {
  const GangRequest& g = w.req;
  const TierPolicy& tier = policy_.TierOf(g.priority);
  std::vector<placement::VictimGang> candidates;
  std::vector<VictimPrice> prices;
  std::vector<GangKey> keys;
  std::vector<bool> graceful;
  int ineligible = 0;
  for (const auto& [key, r] : running_) {
    if (r.req.priority >= g.priority || r.evicting) continue;
    if (!g.pool.empty() && r.pool != g.pool) continue;
    if (!QueueAllowsVictim(key, r, g)) continue;  // team queues: only borrowed capacity
    double at = 0;
    if (!Eligible(r, ctx.now, &at)) {
      ++ineligible;
      if (at > ctx.now) next_wake_ = next_wake_ ? std::min(*next_wake_, at) : at;
      continue;
    }
    const TierPolicy& vt = policy_.TierOf(r.req.priority);
    const double lost_weight = std::max(vt.weight, tier.weight);
    const EvictionChoice how = ChooseEviction(key, lost_weight, g, ctx);
    VictimPrice price{.gpus = r.req.IsShare() ? 1 : r.req.Gpus(), .weight = vt.weight,
                      .lost_work_weight = lost_weight, .gpu_seconds_at_risk = how.graceful ? 0 : how.risk,
                      .notice_cost = how.graceful ? how.notice_cost : 0, .expected_wait_s = 0};
    price.expected_wait_s = ExpectedWaitForFootprint(r, g, ctx);
    placement::VictimGang v;
    v.key = key;
    v.priority = r.req.priority;
    v.gpu_seconds_at_risk = price.gpu_seconds_at_risk;
    v.cost = VictimCost(price, policy_.restart_overhead_s);
    v.pods = r.pods;
    candidates.push_back(std::move(v));
    prices.push_back(price);
    keys.push_back(key);
    graceful.push_back(how.graceful);
  }
  if (candidates.empty()) {
    w.why = fmt::format("waiting longer than the {} tier's target ({}) but no lower-tier gang may be preempted{}",
                        tier.name, Duration(tier.target_wait_s),
                        ineligible ? fmt::format(" ({} ran less than their minimum run time or were preempted too often today)", ineligible) : "");
    return false;
  }
  placement::PreemptionRequest req{.preemptor = SpecOf(g, g.pool, ctx.driver.state()), .priority = g.priority, .candidates = candidates};
  req.rank = placement::VictimRank::kCost;
  auto result = placement::ChoosePreemption(ctx.driver.state(), req);
  if (!result.ok() || !result->helps() || result->decision->victims.empty()) {
    w.why = fmt::format("preemption: {}",
                        result.ok() && result->none ? result->none->Message() : std::string("no victim set helps"));
    return false;
  }
  std::vector<VictimPrice> chosen;
  // Without preempting, the victims' GPUs come free anyway when they end: the wait a
  // preemption avoids is at most the longest of their remaining run times.
  double victims_remaining = 0;
  for (int v : result->decision->victims) {
    chosen.push_back(prices[static_cast<size_t>(v)]);
    victims_remaining = std::max(victims_remaining, running_.at(keys[static_cast<size_t>(v)]).expected_end - ctx.now);
  }
  const double avoided = std::clamp(victims_remaining, 0.0, expected_wait);
  const PreemptionPrice price = PricePreemption(g.Gpus(), tier.weight, avoided, chosen, policy_.restart_overhead_s);
  if (!price.pays()) {
    ++stats_.preemptions_declined;
    w.why = fmt::format("preemption of {} gang(s) declined: {}", chosen.size(), price.Describe());
    return false;
  }
  return EvictAndStart(w, *result->decision, keys, graceful,
                       fmt::format("preempted for {} ({})", g.key.str(), price.Describe()), price.Describe(), ctx);
}

}  // namespace phalanx::scheduling
