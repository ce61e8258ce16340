// Preemption that pays for itself (docs/algorithms.md §8.3–8.4): eligible victims, their
// price, the cheaper eviction per victim, asynchronous evictions, head reclaims.
#include "core/scheduling/engine.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/placement/preemption.h"
#include "core/scheduling/engine_internal.h"

namespace phalanx::scheduling {

using namespace internal;  // NOLINT: this module's own helpers

PreemptionStanding Engine::StandingOf(const std::string& job, int priority, double started, double now) const {
  const TierPolicy& tier = policy_.TierOf(priority);
  PreemptionStanding s;
  s.tier = tier.name;
  s.max_per_day = tier.max_preemptions_per_day;
  s.min_run_s = tier.min_run_s;
  if (tier.max_preemptions_per_day == 0) {
    s.eligible = false;
    s.guard = PreemptionStanding::Guard::kNeverByCost;
    s.eligible_at = std::numeric_limits<double>::infinity();
    return s;
  }
  auto it = preempted_at_.find(job);
  if (it == preempted_at_.end() || it->second.empty()) return s;  // never preempted: no minimum run
  double oldest = std::numeric_limits<double>::infinity();
  for (double t : it->second) {
    if (t > now - kDay) {
      ++s.preempted_in_day;
      oldest = std::min(oldest, t);
    }
  }
  if (s.preempted_in_day >= tier.max_preemptions_per_day) {
    s.eligible = false;
    s.guard = PreemptionStanding::Guard::kDailyCap;
    s.eligible_at = oldest + kDay;
  }
  // The minimum run applies to any attempt after a preemption; the later guard wins.
  if (now - started < tier.min_run_s && started + tier.min_run_s > (s.eligible ? now : s.eligible_at)) {
    s.eligible = false;
    s.guard = PreemptionStanding::Guard::kMinRun;
    s.eligible_at = started + tier.min_run_s;
  }
  return s;
}

std::optional<PreemptionStanding> Engine::VictimStanding(const GangKey& key, double now) const {
  auto it = running_.find(key);
  if (it == running_.end()) return std::nullopt;
  return StandingOf(it->second.req.job, it->second.req.priority, it->second.started, now);
}

void Engine::RecordPreemption(const std::string& job, double now) {
  auto& times = preempted_at_[job];
  while (!times.empty() && times.front() <= now - kDay) times.pop_front();
  times.push_back(now);
}

double Engine::ExpectedWait(const GangRequest& g, double now, const placement::ClusterState& state) const {
  // As the pass counts it: the GPUs of the gangs before it that wait (every pool for a
  // gang that takes any pool), then its own.
  const OrderKey order = OrderOf(g, 0);
  int ahead = 0;
  if (fit_pending_.empty()) {
    // From the per-pool sums in queue order (engine_fit_skip.cc), less its own GPUs.
    ahead = static_cast<int>(WaitingGpusBefore(g.pool.empty() ? nullptr : &g.pool, order, fit_change_seq_));
    if (auto own = waiting_.find(g.key); own != waiting_.end() && own->second->order < order &&
                                         (g.pool.empty() || own->second->req.pool == g.pool)) {
      ahead -= own->second->req.IsShare() ? 1 : own->second->req.Gpus();
    }
  } else {
    for (const auto& [o, waiting] : order_) {
      if (!(o < order)) break;
      if (waiting->gone) continue;  // started during a pass (its entry goes at the pass's end)
      const GangRequest& w = waiting->req;
      if (w.key == g.key || (!g.pool.empty() && w.pool != g.pool)) continue;
      ahead += w.IsShare() ? 1 : w.Gpus();
    }
  }
  const int gpus = g.IsShare() ? 1 : g.Gpus();
  const ReleaseForecast::Shadow s = forecast_.When(g.pool, gpus + ahead, FreeGpus(state, g.pool), now);
  return s.reachable ? std::min(s.start - now, policy_.wait_horizon_s) : policy_.wait_horizon_s;
}

Result<PricedPreemption> Engine::QuotePreemption(const GangRequest& g, double expected_wait,
                                                 std::span<const VictimCandidate> candidates, double now,
                                                 EngineDriver& driver, std::optional<std::set<std::string>> domains,
                                                 std::optional<GangKey> own_plan) const {
  std::vector<const Running*> records;
  records.reserve(candidates.size());
  for (const VictimCandidate& c : candidates) {
    auto it = running_.find(c.key);
    records.push_back(it == running_.end() ? nullptr : &it->second);
  }
  return Quote(g, expected_wait, candidates, records, now, driver, std::move(domains), std::move(own_plan));
}

Result<PricedPreemption> Engine::Quote(const GangRequest& g, double expected_wait,
                                       std::span<const VictimCandidate> candidates,
                                       std::span<const Running* const> records, double now, EngineDriver& driver,
                                       std::optional<std::set<std::string>> domains,
                                       std::optional<GangKey> own_plan, bool reclaim) const {
  PassContext ctx{.now = now, .driver = driver};
  std::vector<VictimFacts> facts;
  std::vector<size_t> index;  // facts -> candidates
  int ineligible = 0;
  std::optional<double> next_eligible;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const VictimCandidate& c = candidates[i];
    // The engine's record of a gang it runs; a description of anything else.
    std::optional<Running> described;
    const Running* r = records[i];
    if (r == nullptr) {
      Running& outside = described.emplace();
      outside.req.key = c.key;
      outside.req.job = c.job.empty() ? c.key.str() : c.job;
      outside.req.pool = c.pool;
      outside.req.priority = c.priority;
      outside.req.gpus_per_member = std::max(c.gpus, 1);
      outside.req.submitted = c.started;
      outside.pool = c.pool;
      outside.started = c.started;
      outside.expected_end = c.started + ExpectedDuration(outside.req);
      r = &outside;
    }
    if (!reclaim && r->req.priority >= g.priority) continue;
    if (!reclaim && !c.leaving) {
      const PreemptionStanding standing = StandingOf(r->req.job, r->req.priority, r->started, now);
      if (!standing.eligible) {
        ++ineligible;
        if (std::isfinite(standing.eligible_at) && standing.eligible_at > now) {
          next_eligible = next_eligible ? std::min(*next_eligible, standing.eligible_at) : standing.eligible_at;
        }
        continue;
      }
    }
    VictimFacts f;
    f.key = c.key;
    f.priority = r->req.priority;
    f.gpus = r->req.IsShare() ? 1 : r->req.Gpus();
    f.pods = c.pods.empty() && records[i] != nullptr ? std::span<const PodUid>(records[i]->pods) : c.pods;
    f.gpu_seconds_at_risk = driver.GpuSecondsAtRisk(c.key);
    f.notice_s = driver.NoticeSeconds(c.key);
    // Asked only where it matters: the driver reads pod annotations to answer.
    f.idle = policy_.TierOf(f.priority).idle_victims_first && driver.IsIdle(c.key);
    f.expected_wait_s = ExpectedWaitForFootprint(*r, g, ctx);
    // Past its expected end nobody knows when it ends: assume another expected run (the
    // forecast's "ends any moment" would make every such victim worthless to preempt).
    f.remaining_s = r->expected_end > now ? r->expected_end - now : ExpectedDuration(r->req);
    facts.push_back(std::move(f));
    index.push_back(i);
  }
  PreemptorFacts preemptor{.spec = SpecOf(g, g.pool, driver.state()), .priority = g.priority,
                           .expected_wait_s = expected_wait, .domains = std::move(domains),
                           .own_plan = std::move(own_plan), .reclaim = reclaim};
  PHX_ASSIGN_OR_RETURN(PricedPreemption quote, ChoosePricedPreemption(policy_, driver.state(), preemptor, facts));
  quote.ineligible = ineligible;
  quote.next_eligible = next_eligible;
  if (quote.decision) {
    for (int& v : quote.decision->victims) v = static_cast<int>(index[static_cast<size_t>(v)]);
  }
  std::vector<bool> graceful(candidates.size(), false);
  for (size_t f = 0; f < quote.graceful.size(); ++f) graceful[index[f]] = quote.graceful[f];
  quote.graceful = std::move(graceful);
  if (quote.outcome == PricedPreemption::Outcome::kNoVictimSet && facts.empty()) {
    quote.why = ineligible ? fmt::format("no lower-tier gang may be preempted ({} ran less than their minimum run "
                                         "time or were preempted too often today)", ineligible)
                           : "no lower-tier gang may be preempted";
  }
  return quote;
}

double Engine::ExpectedWaitForFootprint(const Running& victim, const GangRequest& preemptor, PassContext& ctx) const {
  const std::string& queue = victim.req.pool;
  // Re-queued, the victim keeps its place (first submission): count who waits before it,
  // except the preemptor, which runs on the victim's GPUs. The waiting gangs are counted
  // as they were at the first such question of the pass (or since its last eviction):
  // from the per-pool sums with the changes since undone, or (gangs queued during the
  // pass, which the sums leave out) a prefix over the queue.
  const OrderKey order = OrderOf(victim.req, 0);
  int ahead = 0;
  auto since = ctx.ahead_since.find(queue);
  if (since == ctx.ahead_since.end() && !ctx.ahead.contains(queue) &&
      std::none_of(fit_pending_.begin(), fit_pending_.end(),
                   [&](const Waiting* w) { return !w->gone && w->req.pool == queue; })) {
    since = ctx.ahead_since.emplace(queue, fit_change_seq_).first;
  }
  if (since != ctx.ahead_since.end()) {
    ahead = static_cast<int>(WaitingGpusBefore(&queue, order, since->second));
  } else {
    auto [it, inserted] = ctx.ahead.try_emplace(queue);
    if (inserted) {
      int sum = 0;
      if (auto q = queues_.find(queue); q != queues_.end()) {
        for (const auto& [o, w] : q->second) {
          if (w->gone) continue;  // started earlier in this pass
          const GangRequest& g = w->req;
          sum += g.IsShare() ? 1 : g.Gpus();
          it->second.emplace_back(o, sum);
        }
      }
    }
    const auto& prefix = it->second;
    auto pos = std::lower_bound(prefix.begin(), prefix.end(), order,
                                [](const std::pair<OrderKey, int>& e, const OrderKey& o) { return e.first < o; });
    ahead = pos == prefix.begin() ? 0 : std::prev(pos)->second;
  }
  const int gpus = victim.req.IsShare() ? 1 : victim.req.Gpus();
  if (preemptor.pool == queue && OrderOf(preemptor, 0) < order) ahead = std::max(0, ahead - preemptor.Gpus());
  const int need = gpus + ahead;
  // The victim's own GPUs the preemptor leaves free stay free for it only while nothing else
  // waits; otherwise other work takes them (counting them always cost the LLM-era workload
  // 0.9 points of utilisation: bench/RESULTS.md, "Why the top tiers wait").
  const bool nobody_else_waits = waiting_.empty() || (waiting_.size() == 1 && waiting_.contains(preemptor.key));
  const int free_now =
      FreeGpus(ctx.driver.state(), victim.pool) + (nobody_else_waits ? std::max(0, gpus - preemptor.Gpus()) : 0);
  // Its own release does not count (it is evicted). When the pool has room before it would
  // end anyway, leaving it out changes nothing (the forecast holds a running gang at its
  // expected_end): that answer is taken without looking its release up.
  ReleaseForecast::Shadow s = forecast_.When(victim.pool, need, free_now, ctx.now);
  if (!s.reachable || !(s.start < victim.expected_end)) {
    s = forecast_.When(victim.pool, need, free_now, ctx.now, &victim.req.key);
  }
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

void Engine::OnEvictionRefused(const GangKey& victim) {
  auto it = running_.find(victim);
  if (it == running_.end() || !it->second.evicting) return;
  Running& r = it->second;
  ++stats_.evictions_refused;
  // Nothing of it stopped: it ends when it was expected to before, and may be chosen again.
  r.evicting = false;
  r.expected_end = r.started + ExpectedDuration(r.req);
  forecast_.Add(victim, r.pool, r.expected_end, r.req.IsShare() ? 1 : r.req.Gpus());
  // Nor was it preempted: the attempt counts neither against its daily cap nor its minimum run.
  if (auto times = preempted_at_.find(r.req.job); times != preempted_at_.end()) {
    auto& t = times->second;
    if (auto at = std::find(t.begin(), t.end(), r.evicted_at); at != t.end()) t.erase(at);
    if (t.empty()) preempted_at_.erase(times);
  }
  if (awaiting_gangs_ == 0) return;
  // Its preemptor stops waiting for it: with no victim left to wait for it is tried afresh
  // (its preemption search included) by the next full pass.
  for (auto& [key, w] : waiting_) {
    auto pos = std::find(w->awaiting.begin(), w->awaiting.end(), victim);
    if (pos == w->awaiting.end()) continue;
    w->awaiting.erase(pos);
    NoteAwaiting(*w, true);
    if (w->awaiting.empty()) {
      w->reserve_pool.clear();
      w->awaiting_until = 0;
      w->why = fmt::format("the eviction of {} was refused (it runs on); looking for other room", victim.str());
    }
  }
}

std::optional<PricedPreemption> Engine::ChooseReclaim(const GangRequest& g, const std::string& pool,
                                                     std::span<const Running* const> records,
                                                     std::vector<GangKey>& keys, PassContext& ctx) {
  // The cost rule's choice (ChoosePricedPreemption), as for any preemption: the cheapest
  // set close to the need, per victim the cheaper of losing its work and waiting for its
  // checkpoint, idle victims first where their tier says so.
  std::vector<VictimCandidate> candidates;
  candidates.reserve(records.size());
  keys.clear();
  for (const Running* r : records) {
    candidates.push_back(VictimCandidate{.key = r->req.key});
    keys.push_back(r->req.key);
  }
  GangRequest in_pool = g;
  in_pool.pool = pool;
  auto quote = Quote(in_pool, policy_.wait_horizon_s, candidates, records, ctx.now, ctx.driver, std::nullopt,
                     std::nullopt, /*reclaim=*/true);
  if (!quote.ok() || !quote->pays() || !quote->decision || quote->decision->victims.empty()) return std::nullopt;
  return std::move(*quote);
}

bool Engine::TryReclaim(Waiting& w, const std::string& pool, PassContext& ctx) {
  const GangRequest& g = w.req;
  std::vector<const Running*> records;
  for (const auto& [key, r] : running_) {
    if (!r.reclaimable || r.evicting || r.req.priority >= g.priority || r.pool != pool) continue;
    if (!QueueAllowsVictim(r, g, w.team)) continue;  // team queues: only borrowed capacity
    records.push_back(&r);
  }
  if (records.empty()) return false;
  std::vector<GangKey> keys;
  std::optional<PricedPreemption> quote = ChooseReclaim(g, pool, records, keys, ctx);
  if (!quote) return false;
  ++stats_.reclaims;
  return EvictAndStart(w, *quote->decision, keys, quote->graceful, "reclaimed by the head of its pool",
                       "reclaimed preemptible backfill", ctx);
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
    RecordPreemption(job, ctx.now);
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
    r->second.evicted_at = ctx.now;
    r->second.expected_end = ctx.now + *notice;
    forecast_.Add(victim, r->second.pool, ctx.now + *notice, r->second.req.IsShare() ? 1 : r->second.req.Gpus());
    pending.push_back(victim);
    longest_notice = std::max(longest_notice, *notice);
  }
  ctx.failed.clear();
  ctx.ahead.clear();
  ctx.ahead_since.clear();
  if (!pending.empty()) {
    const bool was_awaiting = !w.awaiting.empty();
    w.awaiting = std::move(pending);
    NoteAwaiting(w, was_awaiting);
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
  // Every lower-tier gang running in its pool that is not leaving already; the engine's
  // records describe them (QuotePreemption checks their standing and prices them).
  std::vector<VictimCandidate> candidates;
  std::vector<GangKey> keys;
  std::vector<const Running*> records;
  for (const auto& [key, r] : running_) {
    if (r.req.priority >= g.priority || r.evicting) continue;
    if (!g.pool.empty() && r.pool != g.pool) continue;
    if (!QueueAllowsVictim(r, g, w.team)) continue;  // team queues: only borrowed capacity
    candidates.push_back(VictimCandidate{.key = key});
    keys.push_back(key);
    records.push_back(&r);
  }
  auto quote = Quote(g, expected_wait, candidates, records, ctx.now, ctx.driver, std::nullopt, std::nullopt);
  if (!quote.ok()) {
    w.why = fmt::format("preemption: {}", quote.status().message());
    return false;
  }
  if (quote->next_eligible) next_wake_ = next_wake_ ? std::min(*next_wake_, *quote->next_eligible) : *quote->next_eligible;
  using Outcome = PricedPreemption::Outcome;
  switch (quote->outcome) {
    case Outcome::kPays:
      break;
    case Outcome::kDeclined:
      ++stats_.preemptions_declined;
      w.why = quote->why;
      return false;
    case Outcome::kNoVictimSet:
      w.why = candidates.empty() || quote->ineligible == static_cast<int>(candidates.size())
                  ? fmt::format("waiting longer than the {} tier's target ({}) but {}", tier.name,
                                Duration(tier.target_wait_s), quote->why)
                  : fmt::format("preemption: {}", quote->why);
      return false;
    default:
      w.why = fmt::format("preemption: {}", quote->why);
      return false;
  }
  return EvictAndStart(w, *quote->decision, keys, quote->graceful,
                       fmt::format("preempted for {} ({})", g.key.str(), quote->price.Describe()),
                       quote->price.Describe(), ctx);
}

}  // namespace phalanx::scheduling
