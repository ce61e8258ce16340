// Tier preemption (tier_preemption.h; docs/algorithms.md §8.3–8.4): eligible victims,
// their price, the cheaper eviction per victim, asynchronous evictions, head and queue
// reclaims' choice.
#include "core/scheduling/engine/tier_preemption.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/placement/preemption.h"
#include "core/scheduling/engine/admission_order.h"
#include "core/scheduling/engine/pass_context.h"
#include "core/scheduling/engine/queue_reclaim.h"

namespace phalanx::scheduling {

using namespace internal;  // NOLINT: this module's own helpers

PreemptionStanding TierPreemption::StandingOf(const std::string& job, int priority, double started, double now) const {
  auto it = preempted_at_.find(job);
  return StandingOf(it == preempted_at_.end() ? nullptr : &it->second, priority, started, now);
}

PreemptionStanding TierPreemption::StandingOf(const RunningGang& r, double now) const {
  if (r.history_version != history_version_) {
    auto it = preempted_at_.find(r.req.job);
    r.history = it == preempted_at_.end() ? nullptr : &it->second;
    r.history_version = history_version_;
  }
  return StandingOf(r.history, r.req.priority, r.started, now, /*named=*/false);
}

PreemptionStanding TierPreemption::StandingOf(const std::deque<double>* history, int priority, double started,
                                              double now, bool named) const {
  const TierPolicy& tier = s_->policy.TierOf(priority);
  PreemptionStanding s;
  if (named) s.tier = tier.name;
  s.max_per_day = tier.max_preemptions_per_day;
  s.min_run_s = tier.min_run_s;
  if (tier.max_preemptions_per_day == 0) {
    s.eligible = false;
    s.guard = PreemptionStanding::Guard::kNeverByCost;
    s.eligible_at = std::numeric_limits<double>::infinity();
    return s;
  }
  if (history == nullptr || history->empty()) return s;  // never preempted: no minimum run
  double oldest = std::numeric_limits<double>::infinity();
  for (double t : *history) {
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

void TierPreemption::Record(const std::string& job, double now) {
  ++history_version_;
  auto& times = preempted_at_[job];
  while (!times.empty() && times.front() <= now - kDay) times.pop_front();
  times.push_back(now);
}

void TierPreemption::Unrecord(const std::string& job, double at) {
  ++history_version_;
  auto times = preempted_at_.find(job);
  if (times == preempted_at_.end()) return;
  auto& t = times->second;
  if (auto pos = std::find(t.begin(), t.end(), at); pos != t.end()) t.erase(pos);
  if (t.empty()) preempted_at_.erase(times);
}

int TierPreemption::PreemptionsInDay(const std::string& job, double now) const {
  auto it = preempted_at_.find(job);
  if (it == preempted_at_.end()) return 0;
  return static_cast<int>(
      std::count_if(it->second.begin(), it->second.end(), [&](double t) { return t > now - kDay; }));
}

double TierPreemption::ExpectedWait(const AdmissionOrder& queue_order, const GangRequest& g, double now,
                                    const placement::ClusterState& state) const {
  // As the pass counts it: the GPUs of the gangs before it that wait (every pool for a
  // gang that takes any pool), then its own.
  const OrderKey order = OrderOf(g, 0);
  int ahead = 0;
  if (!queue_order.HasUnindexed()) {
    // From the per-pool sums in queue order (admission_order_fit.cc), less its own GPUs.
    ahead = static_cast<int>(
        queue_order.WaitingGpusBefore(g.pool.empty() ? nullptr : &g.pool, order, queue_order.change_seq()));
    if (auto own = s_->waiting.find(g.key); own != s_->waiting.end() && own->second->order < order &&
                                            (g.pool.empty() || own->second->req.pool == g.pool)) {
      ahead -= own->second->req.IsShare() ? 1 : own->second->req.Gpus();
    }
  } else {
    for (const auto& [o, waiting] : s_->by_order) {
      if (!(o < order)) break;
      if (waiting->gone) continue;  // started during a pass (its entry goes at the pass's end)
      const GangRequest& w = waiting->req;
      if (w.key == g.key || (!g.pool.empty() && w.pool != g.pool)) continue;
      ahead += w.IsShare() ? 1 : w.Gpus();
    }
  }
  const int gpus = g.IsShare() ? 1 : g.Gpus();
  const ReleaseForecast::Shadow s =
      s_->forecast.When(g.pool, gpus + ahead, EngineState::FreeGpus(state, g.pool), now);
  return s.reachable ? std::min(s.start - now, s_->policy.wait_horizon_s) : s_->policy.wait_horizon_s;
}

Result<PricedPreemption> TierPreemption::Quote(const AdmissionOrder& order, const GangRequest& g,
                                               double expected_wait, std::span<const VictimCandidate> candidates,
                                               double now, EngineDriver& driver,
                                               std::optional<std::set<std::string>> domains,
                                               std::optional<GangKey> own_plan) const {
  std::vector<const RunningGang*> records;
  records.reserve(candidates.size());
  for (const VictimCandidate& c : candidates) {
    auto it = s_->running.find(c.key);
    records.push_back(it == s_->running.end() ? nullptr : &it->second);
  }
  return Quote(order, g, expected_wait, candidates, records, now, driver, std::move(domains), std::move(own_plan));
}

Result<PricedPreemption> TierPreemption::Quote(const AdmissionOrder& order, const GangRequest& g,
                                               double expected_wait, std::span<const VictimCandidate> candidates,
                                               std::span<const RunningGang* const> records, double now,
                                               EngineDriver& driver, std::optional<std::set<std::string>> domains,
                                               std::optional<GangKey> own_plan, bool reclaim) const {
  PassContext ctx{.now = now, .driver = driver, .order = order};
  std::vector<VictimFacts> facts;
  std::vector<size_t> index;  // facts -> candidates
  int ineligible = 0;
  std::optional<double> next_eligible;
  FootprintMemo memo;
  facts.reserve(records.size());
  index.reserve(records.size());
  // A description of a candidate the engine does not run (made when one is, outside the
  // loop: declared in it, the empty optional cleared a whole RunningGang per candidate).
  std::optional<RunningGang> described;
  for (size_t i = 0; i < records.size(); ++i) {
    // No candidates: the engine's own records, nothing more to say about them.
    const VictimCandidate* c = candidates.empty() ? nullptr : &candidates[i];
    // The engine's record of a gang it runs; a description of anything else.
    const RunningGang* r = records[i];
    if (r == nullptr) {
      RunningGang& outside = described.emplace();
      outside.req.key = c->key;
      outside.req.job = c->job.empty() ? c->key.str() : c->job;
      outside.req.pool = c->pool;
      outside.req.priority = c->priority;
      outside.req.gpus_per_member = std::max(c->gpus, 1);
      outside.req.submitted = c->started;
      outside.pool = c->pool;
      outside.started = c->started;
      outside.expected_end = c->started + s_->ExpectedDuration(outside.req);
      r = &outside;
    }
    const GangKey& key = c != nullptr ? c->key : r->req.key;
    if (!reclaim && r->req.priority >= g.priority) continue;
    if (!reclaim && (c == nullptr || !c->leaving)) {
      const PreemptionStanding standing = records[i] == nullptr ? StandingOf(r->req.job, r->req.priority, r->started, now)
                                                         : StandingOf(*r, now);
      if (!standing.eligible) {
        ++ineligible;
        if (std::isfinite(standing.eligible_at) && standing.eligible_at > now) {
          next_eligible = next_eligible ? std::min(*next_eligible, standing.eligible_at) : standing.eligible_at;
        }
        continue;
      }
    }
    VictimFacts f;
    f.key = key;
    f.priority = r->req.priority;
    f.gpus = r->req.IsShare() ? 1 : r->req.Gpus();
    f.pods = (c == nullptr || c->pods.empty()) && records[i] != nullptr ? std::span<const PodUid>(records[i]->pods)
                                                                        : std::span<const PodUid>(c->pods);
    const EngineDriver::PriceTerms terms = driver.PriceTermsOf(r->req);
    f.gpu_seconds_at_risk = terms.gpu_seconds_at_risk;
    f.notice_s = terms.notice_s;
    // Asked only where it matters: the driver reads pod annotations to answer.
    f.idle = s_->policy.TierOf(f.priority).idle_victims_first && driver.IsIdle(key);
    f.expected_wait_s = ExpectedWaitForFootprint(*r, records[i] != nullptr, g, ctx, memo);
    // Past its expected end nobody knows when it ends: assume another expected run (the
    // forecast's "ends any moment" would make every such victim worthless to preempt).
    f.remaining_s = r->expected_end > now ? r->expected_end - now : s_->ExpectedDuration(r->req);
    facts.push_back(std::move(f));
    index.push_back(i);
  }
  PreemptorFacts preemptor{.spec = SpecOf(g, g.pool, driver.state()), .priority = g.priority,
                           .expected_wait_s = expected_wait, .domains = std::move(domains),
                           .own_plan = std::move(own_plan), .reclaim = reclaim};
  PHX_ASSIGN_OR_RETURN(PricedPreemption quote, ChoosePricedPreemption(s_->policy, driver.state(), preemptor, facts));
  quote.ineligible = ineligible;
  quote.next_eligible = next_eligible;
  if (quote.decision) {
    for (int& v : quote.decision->victims) v = static_cast<int>(index[static_cast<size_t>(v)]);
  }
  std::vector<bool> graceful(records.size(), false);
  for (size_t f = 0; f < quote.graceful.size(); ++f) graceful[index[f]] = quote.graceful[f];
  quote.graceful = std::move(graceful);
  if (quote.outcome == PricedPreemption::Outcome::kNoVictimSet && facts.empty()) {
    quote.why = ineligible ? fmt::format("no lower-tier gang may be preempted ({} ran less than their minimum run "
                                         "time or were preempted too often today)", ineligible)
                           : "no lower-tier gang may be preempted";
  }
  return quote;
}

double TierPreemption::ExpectedWaitForFootprint(const RunningGang& victim, bool tracked, const GangRequest& preemptor,
                                                PassContext& ctx, FootprintMemo& memo) const {
  const std::string& queue = victim.req.pool;
  // Re-queued, the victim keeps its place (first submission): count who waits before it,
  // except the preemptor, which runs on the victim's GPUs. The waiting gangs are counted
  // as they were at the first such question of the pass (or since its last eviction):
  // from the per-pool sums with the changes since undone, or (gangs queued during the
  // pass, which the sums leave out) a prefix over the queue.
  const OrderKey order = OrderOf(victim.req, 0);
  // GPUs of the gangs that wait before it in `q` ("" = any pool).
  auto ahead_in = [&](const std::string& q) {
    int ahead = 0;
    auto since = ctx.ahead_since.find(q);
    if (since == ctx.ahead_since.end() && !ctx.ahead.contains(q) && !ctx.order.HasUnindexedIn(q)) {
      since = ctx.ahead_since.emplace(q, ctx.order.change_seq()).first;
    }
    if (since != ctx.ahead_since.end()) {
      ahead = static_cast<int>(ctx.order.WaitingGpusBefore(&q, order, since->second));
    } else {
      auto [it, inserted] = ctx.ahead.try_emplace(q);
      if (inserted) {
        int sum = 0;
        if (auto by = s_->by_pool.find(q); by != s_->by_pool.end()) {
          for (const auto& [o, w] : by->second) {
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
    if (preemptor.pool == q && OrderOf(preemptor, 0) < order) ahead = std::max(0, ahead - preemptor.Gpus());
    return ahead;
  };
  int ahead = ahead_in(queue);
  // A victim that may run in any pool waits, once re-queued, behind the gangs that need the
  // pool it ran in as well as behind the other any-pool gangs: counting only the latter
  // priced it at almost no wait, and under overload it waited hours (bench/RESULTS.md
  // "Issue 25, session 6"). (A pool's victim is not charged every any-pool gang before it:
  // those may go to any pool.)
  if (queue.empty() && !victim.pool.empty()) ahead += ahead_in(victim.pool);
  const int gpus = victim.req.IsShare() ? 1 : victim.req.Gpus();
  const int need = gpus + ahead;
  // The victim's own GPUs the preemptor leaves free stay free for it only while nothing else
  // waits; otherwise other work takes them (counting them always cost the LLM-era workload
  // 0.9 points of utilisation: bench/RESULTS.md, "Why the top tiers wait").
  // Per search, what is the same for every victim of a pool: its free GPUs, and what it
  // releases by the time the preemptor gives the GPUs back.
  const double back = ctx.now + s_->ExpectedDuration(preemptor);
  if (!memo.pool || *memo.pool != victim.pool) {
    memo.pool = victim.pool;
    memo.releases = s_->forecast.PoolOf(victim.pool);
    memo.free = EngineState::FreeGpus(ctx.driver.state(), victim.pool);
    memo.released_by_back = s_->forecast.ReleasedBy(memo.releases, back, ctx.now);
    memo.nobody_else_waits =
        s_->waiting.empty() || (s_->waiting.size() == 1 && s_->waiting.contains(preemptor.key));
  }
  const bool nobody_else_waits = memo.nobody_else_waits;
  const int free_now = memo.free + (nobody_else_waits ? std::max(0, gpus - preemptor.Gpus()) : 0);
  // Its own release does not count (it is evicted): a gang the engine runs is found by its
  // expected end (the forecast holds it there). A described one is looked up by key only
  // when the pool has no room before it would end anyway (else leaving it out changes nothing).
  ReleaseForecast::Shadow s;
  if (tracked) {
    s = s_->forecast.WhenWithout(memo.releases, need, free_now, ctx.now, victim.expected_end, gpus);
  } else {
    s = s_->forecast.When(memo.releases, need, free_now, ctx.now);
    if (!s.reachable || !(s.start < victim.expected_end)) {
      s = s_->forecast.When(victim.pool, need, free_now, ctx.now, &victim.req.key);
    }
  }
  double wait = s.reachable ? s.start - ctx.now : std::numeric_limits<double>::infinity();
  // The preemptor gives the GPUs back when it ends; the forecast does not know it yet.
  const int victim_back = memo.released_by_back -
                          (victim.expected_end <= back ? gpus : 0);  // it releases nothing once evicted
  if (free_now + victim_back + preemptor.Gpus() >= need) {
    wait = std::min(wait, back - ctx.now);
  }
  return std::min(wait, s_->policy.wait_horizon_s);
}

std::optional<ChosenPreemption> TierPreemption::ChooseReclaim(const GangRequest& g, const std::string& pool,
                                                             std::span<const RunningGang* const> records,
                                                             PassContext& ctx) const {
  // The cost rule's choice (ChoosePricedPreemption), as for any preemption: the cheapest
  // set close to the need, per victim the cheaper of losing its work and waiting for its
  // checkpoint, idle victims first where their tier says so.
  GangRequest in_pool = g;
  in_pool.pool = pool;
  auto quote = Quote(ctx.order, in_pool, s_->policy.wait_horizon_s, {}, records, ctx.now, ctx.driver, std::nullopt,
                     std::nullopt, /*reclaim=*/true);
  if (!quote.ok() || !quote->pays() || !quote->decision || quote->decision->victims.empty()) return std::nullopt;
  ChosenPreemption chosen;
  chosen.keys.reserve(records.size());
  for (const RunningGang* r : records) chosen.keys.push_back(r->req.key);
  chosen.decision = std::move(*quote->decision);
  chosen.graceful = std::move(quote->graceful);
  return chosen;
}

std::optional<ChosenPreemption> TierPreemption::ChooseBackfillReclaim(WaitingGang& w, const std::string& pool,
                                                                     QueueReclaim& queues, PassContext& ctx) {
  const GangRequest& g = w.req;
  std::vector<const RunningGang*> records;
  for (const auto& [key, r] : s_->running) {
    if (!r.reclaimable || r.evicting || r.req.priority >= g.priority || r.pool != pool) continue;
    if (!queues.AllowsVictim(r, g, w.team)) continue;  // team queues: only borrowed capacity
    records.push_back(&r);
  }
  if (records.empty()) return std::nullopt;
  std::optional<ChosenPreemption> chosen = ChooseReclaim(g, pool, records, ctx);
  if (!chosen) return std::nullopt;
  ++s_->stats.reclaims;
  chosen->reason = "reclaimed by the head of its pool";
  chosen->why = "reclaimed preemptible backfill";
  return chosen;
}

EvictionResult TierPreemption::Evict(WaitingGang& w, const ChosenPreemption& chosen, PassContext& ctx) {
  const GangRequest& g = w.req;
  const placement::PreemptionDecision& decision = chosen.decision;
  EvictionResult result;
  std::vector<GangKey>& evicted = result.evicted;
  std::vector<GangKey> pending;
  double longest_notice = 0;
  for (int v : decision.victims) {
    const GangKey victim = chosen.keys[static_cast<size_t>(v)];
    RunningGang& running = s_->running.at(victim);
    const std::string job = running.req.job;
    // Asked to stop from the call on: a driver that stops it at once reports it gone from
    // inside Evict (Engine::OnEnded), and its end is then no run time to learn from.
    running.evicting = true;
    const std::optional<double> notice =
        ctx.driver.Evict(victim, g.key, chosen.reason, chosen.graceful[static_cast<size_t>(v)]);
    if (!notice) {
      if (auto r = s_->running.find(victim); r != s_->running.end()) r->second.evicting = false;
      continue;
    }
    Record(job, ctx.now);
    evicted.push_back(victim);
    ++s_->stats.preemptions;
    auto r = s_->running.find(victim);
    if (r == s_->running.end()) continue;  // the driver reported it gone already
    if (*notice <= 0) {
      s_->EraseRunning(r);
      continue;
    }
    // Told to checkpoint and stop: it holds its GPUs until then.
    r->second.evicting = true;
    r->second.evicted_at = ctx.now;
    r->second.expected_end = ctx.now + *notice;
    s_->forecast.Add(victim, r->second.pool, ctx.now + *notice,
                     r->second.req.IsShare() ? 1 : r->second.req.Gpus());
    pending.push_back(victim);
    longest_notice = std::max(longest_notice, *notice);
  }
  ctx.failed.clear();
  ctx.ahead.clear();
  ctx.ahead_since.clear();
  if (!pending.empty()) {
    const bool was_awaiting = !w.awaiting.empty();
    w.awaiting = std::move(pending);
    s_->NoteAwaiting(w, was_awaiting);
    w.reserve_pool = decision.plan.pool;
    w.awaiting_until = ctx.now + longest_notice + kEvictionGrace;
    s_->WakeAt(w.awaiting_until);
    w.why = fmt::format("preempted {} gang(s) ({}); waiting up to {} for {} of them to checkpoint and stop",
                        evicted.size(), chosen.why, Duration(longest_notice), w.awaiting.size());
    result.awaiting = true;
  }
  return result;
}

std::optional<ChosenPreemption> TierPreemption::Choose(WaitingGang& w, double expected_wait, QueueReclaim& queues,
                                                       PassContext& ctx) {
  const GangRequest& g = w.req;
  const TierPolicy& tier = s_->policy.TierOf(g.priority);
  // Every lower-tier gang running in its pool that is not leaving already; the engine's
  // records describe them (QuotePreemption checks their standing and prices them).
  std::vector<const RunningGang*> records;
  for (const auto& [key, r] : s_->running) {
    if (r.req.priority >= g.priority || r.evicting) continue;
    if (!g.pool.empty() && r.pool != g.pool) continue;
    if (!queues.AllowsVictim(r, g, w.team)) continue;  // team queues: only borrowed capacity
    records.push_back(&r);
  }
  auto quote = Quote(ctx.order, g, expected_wait, {}, records, ctx.now, ctx.driver, std::nullopt, std::nullopt);
  if (!quote.ok()) {
    w.why = fmt::format("preemption: {}", quote.status().message());
    return std::nullopt;
  }
  if (quote->next_eligible) s_->WakeAt(*quote->next_eligible);
  using Outcome = PricedPreemption::Outcome;
  switch (quote->outcome) {
    case Outcome::kPays:
      break;
    case Outcome::kDeclined:
      ++s_->stats.preemptions_declined;
      w.why = quote->why;
      return std::nullopt;
    case Outcome::kNoVictimSet:
      w.why = records.empty() || quote->ineligible == static_cast<int>(records.size())
                  ? fmt::format("waiting longer than the {} tier's target ({}) but {}", tier.name,
                                Duration(tier.target_wait_s), quote->why)
                  : fmt::format("preemption: {}", quote->why);
      return std::nullopt;
    default:
      w.why = fmt::format("preemption: {}", quote->why);
      return std::nullopt;
  }
  // The victims index the candidates: their keys, taken only for a search that pays.
  std::vector<GangKey> keys;
  keys.reserve(records.size());
  for (const RunningGang* r : records) keys.push_back(r->req.key);
  return ChosenPreemption{.decision = std::move(*quote->decision),
                          .keys = std::move(keys),
                          .graceful = std::move(quote->graceful),
                          .reason = fmt::format("preempted for {} ({})", g.key.str(), quote->price.Describe()),
                          .why = quote->price.Describe()};
}

}  // namespace phalanx::scheduling
