// The scheduling engine's pass (engine.h, docs/algorithms.md §8.1–8.4): the admission
// order walks the waiting gangs; each is placed and checked against its pool's head
// (backfill), or waits, may become a head, take back what its queue lent or its head let
// in, or buy room by tier preemption. Admissions and evictions go to the driver.
#include "core/scheduling/engine.h"

#include <algorithm>
#include <bit>

#include <fmt/format.h>

#include "core/placement/node_score.h"
#include "core/scheduling/engine/pass_context.h"

namespace phalanx::scheduling {

using namespace internal;  // NOLINT: this module's own helpers

// --- the pass -------------------------------------------------------------------------------

void Engine::Pass(double now, EngineDriver& driver, Scope scope) {
  ++state_->stats.passes;
  state_->next_wake.reset();
  PassContext ctx{.now = now, .driver = driver, .order = order_, .scope = scope};
  state_->in_pass = true;
  state_->pass_seq_limit = state_->next_seq;
  backfill_.ReforecastOverdue(now);
  order_.BeginPass(ctx);
  backfill_.HoldAwaitedPools(ctx);
  order_.Walk(ctx, [&](WaitingGang& w) { TryGang(w, ctx); });
  state_->in_pass = false;
  order_.EndPass(ctx);
  for (const auto& w : state_->gone) Unindex(*w);
  state_->gone.clear();
  // Every gang queued before the pass was walked or skipped (a queue with no room): those
  // not seen before count as seen now, as TryGang marks the ones it walks.
  std::erase_if(state_->unseen, [&](const GangKey& key) {
    auto it = state_->waiting.find(key);
    if (it == state_->waiting.end()) return true;
    WaitingGang& w = *it->second;
    if (std::get<2>(w.order) >= state_->pass_seq_limit) return false;  // queued during the pass
    order_.MarkSeen(w);
    if (w.since < 0) w.since = now;
    return true;
  });
  backfill_.Remember(ctx);
}

std::optional<Admission> Engine::Place(const GangRequest& g, PassContext& ctx) {
  const placement::ClusterState& state = ctx.driver.StateFor(g);
  if (g.IsShare()) {
    placement::PodRequest req{.gpus = 1, .milli = g.milli, .pool = std::nullopt, .priority = g.priority};
    if (!g.pool.empty()) req.pool = g.pool;
    ++state_->stats.plan_calls;
    auto choice = placement::PickBestNode(state, req);
    if (!choice) return std::nullopt;
    Admission a;
    a.key = g.key;
    a.pool = state.pool(state.node(choice->node).pool).name;
    a.share = std::make_pair(state.node(choice->node).spec.name, std::countr_zero(choice->score.gpus));
    return a;
  }
  if (EngineState::FreeGpus(state, g.pool) < g.Gpus()) return std::nullopt;
  const auto shape = std::make_tuple(g.pool, g.gpus_per_member, g.milli, g.level);
  if (auto f = ctx.failed.find(shape); f != ctx.failed.end() && g.members >= f->second) return std::nullopt;
  ++state_->stats.plan_calls;
  auto planned = placement::PlanGang(state, SpecOf(g, g.pool, state));
  if (!planned.ok() || !planned->fits()) {
    auto [it, inserted] = ctx.failed.emplace(shape, g.members);
    if (!inserted) it->second = std::min(it->second, g.members);
    return std::nullopt;
  }
  Admission a;
  a.key = g.key;
  a.pool = planned->plan->pool;
  a.members = planned->plan->members;
  a.plan = std::move(planned->plan);
  return a;
}

bool Engine::Start(WaitingGang& w, Admission admission, PassContext& ctx) {
  std::optional<std::vector<PodUid>> pods = ctx.driver.Admit(w.req, admission);
  if (!pods) return false;
  GangRequest req = w.req;
  Forget(req.key);  // `w` is gone from here on
  Track(std::move(req), admission.pool, std::move(*pods), ctx.now, admission.kind == AdmitKind::kPreemptibleBackfill);
  ++state_->stats.admitted;
  if (admission.backfill()) ++state_->stats.backfilled;
  return true;
}

void Engine::TryGang(WaitingGang& w, PassContext& ctx) {
  if (w.gone) return;  // started or removed earlier in this pass
  // Skipped since it was last walked: the reason it was given meanwhile.
  if (std::optional<std::string> skipped = order_.ReasonBeforeWalk(w)) w.why = std::move(*skipped);
  w.why_pass = state_->stats.passes;
  const GangRequest& g = w.req;
  const GangKey& key = g.key;
  const std::string& queue = g.pool;
  // GPUs of gangs before this one that still wait (for "any pool": in every pool).
  int& ahead_in_pool = ctx.ahead_waiting[queue];  // std::map: the reference stays valid
  const int ahead_waiting = queue.empty() ? ctx.ahead_all : ahead_in_pool;
  const bool tried = ctx.scope == PassScope::kFull || w.fresh;
  order_.MarkSeen(w);
  if (w.since < 0) w.since = ctx.now;
  const int gpus = g.IsShare() ? 1 : g.Gpus();
  const TierPolicy& tier = state_->policy.TierOf(g.priority);
  // Team queues: a gang its queue has no room for waits and holds nothing back.
  std::optional<QueueLedger::Fit> quota;
  if (state_->ledger.enabled() && w.awaiting.empty()) {
    quota = reclaim_.QuotaFor(w, ctx);
    if (!quota) {
      ctx.quota_refused = true;
      return;
    }
  }
  // It stays queued: gangs after it count its GPUs as ahead of them.
  auto stays = [&] {
    ahead_in_pool += gpus;
    ctx.ahead_all += gpus;
  };
  // Its victims are still checkpointing: it holds their pool meanwhile (§8.4).
  auto await_victims = [&] {
    if (!ctx.heads.contains(w.reserve_pool)) ctx.heads.emplace(w.reserve_pool, backfill_.AwaitingHead(w, ctx));
    stays();
  };

  if (tried) {
    // Planned first, then checked against the head of the pool it landed in.
    std::optional<Admission> admission = Place(g, ctx);
    // "Any pool": the planner's pool must have quota room too.
    if (admission && quota && g.pool.empty() &&
        state_->ledger.Check(w.team, state_->ledger.PoolIndex(admission->pool), AmountOf(g)) ==
            QueueLedger::Fit::kNoRoom) {
      admission.reset();
      const placement::ClusterState& state = ctx.driver.state();
      for (placement::PoolId p = 0; p < state.PoolCount() && !admission; ++p) {
        if (state_->ledger.Check(w.team, state_->ledger.PoolIndex(state.pool(p).name), AmountOf(g)) ==
            QueueLedger::Fit::kNoRoom) {
          continue;
        }
        GangRequest in_pool = g;
        in_pool.pool = state.pool(p).name;
        admission = Place(in_pool, ctx);
      }
    }
    std::optional<AdmitKind> kind;
    if (admission) kind = backfill_.KindOf(g, *admission, ctx);
    if (admission && kind) {
      admission->kind = *kind;
      if (Start(w, std::move(*admission), ctx)) return;
    }
  }

  // It waits. A gang that would be its pool's head first takes back preemptible
  // backfill; any gang whose wait exceeds its tier's target may buy room.
  const placement::ClusterState& state = ctx.driver.state();
  // Victims it preempted earlier are still checkpointing: wait for them, evict no more,
  // and keep the GPUs they free for it (it is the head of their pool meanwhile).
  const bool was_awaiting = !w.awaiting.empty();
  std::erase_if(w.awaiting, [&](const GangKey& v) { return !state_->running.contains(v); });
  state_->NoteAwaiting(w, was_awaiting);
  if (!w.awaiting.empty() && ctx.now < w.awaiting_until) {
    state_->WakeAt(w.awaiting_until);
    await_victims();
    return;
  }
  // Waited long enough: it stops waiting for the rest (and may choose other victims).
  const bool still_awaiting = !w.awaiting.empty();
  w.awaiting.clear();
  state_->NoteAwaiting(w, still_awaiting);
  // Within its queue's nominal quota: take back GPUs its queue lent out.
  if (tried && quota == QueueLedger::Fit::kWithinNominal) {
    if (EvictAndStart(w, reclaim_.Choose(w, preemption_, ctx), ctx)) return;
    if (!w.awaiting.empty()) {
      await_victims();
      return;
    }
  }
  // The pool it would be the head of: its own, or (any pool) the one where it is
  // expected to start first; none if those have a head already or it has not waited
  // its tier's reserve_after_s yet.
  std::optional<HeadPlan> head = backfill_.HeadFor(w, ctx);
  // A head takes back the preemptible backfill it let in.
  if (tried && head && state_->reclaimable > 0 &&
      EvictAndStart(w, preemption_.ChooseBackfillReclaim(w, head->reservation.pool, reclaim_, ctx), ctx)) {
    return;
  }
  const int free_now = EngineState::FreeGpus(state, queue);
  // Its expected wait decides a preemption and is in its reason: both only for a gang
  // this pass tries (a gang not tried keeps its reason).
  double wait = state_->policy.wait_horizon_s;
  if (tried) {
    const ReleaseForecast::Shadow own = state_->forecast.When(queue, gpus + ahead_waiting, free_now, ctx.now);
    if (own.reachable) wait = std::min(own.start - ctx.now, state_->policy.wait_horizon_s);
  }
  std::string preemption;  // what the preemption attempt found, if one ran
  if (tried && !g.IsShare() && tier.target_wait_s >= 0 && wait > tier.target_wait_s &&
      ctx.searches[queue] < state_->policy.preemption_searches_per_pass) {
    ++ctx.searches[queue];
    w.why.clear();
    if (EvictAndStart(w, preemption_.Choose(w, wait, reclaim_, ctx), ctx)) return;
    preemption = std::move(w.why);
    if (!w.awaiting.empty()) {
      w.why = std::move(preemption);
      await_victims();
      return;
    }
  }
  const std::string suffix = preemption.empty() ? "" : "; " + preemption;
  if (head) {
    const HeadReservation& h = head->reservation;
    w.why = fmt::format(
        "head of pool {}: needs {} x {} GPUs, {} free; expected start {}{}{}", h.pool, g.members, g.gpus_per_member,
        free_now, h.reachable ? "in " + Duration(h.expected_start - ctx.now) : "unknown (not enough GPUs end)",
        state_->policy.backfill ? fmt::format("; later gangs backfill if they end by then or leave it room "
                                              "({} spare GPUs then)",
                                              h.spare_gpus)
                                : "",
        suffix);
    const std::string pool = h.pool;
    ctx.heads.emplace(pool, std::move(*head));
  } else if (tried) {
    auto h = ctx.heads.find(queue);
    const HeadPlan* behind = h != ctx.heads.end() && h->second.reservation.head != key ? &h->second : nullptr;
    auto format = [&] {
      return WaitReason(queue, behind ? &behind->reservation.head : nullptr,
                        behind ? behind->reservation.expected_start : 0, gpus, free_now, wait, ctx.now, suffix);
    };
    if (suffix.empty()) {
      // Thousands of gangs behind one head give a handful of texts: format each once.
      auto [it, added] = ctx.reasons.try_emplace(ReasonKey{behind, behind ? 0 : gpus, behind ? 0 : free_now, wait});
      if (added) it->second = format();
      w.why = it->second;
    } else {
      w.why = format();
    }
  }
  stays();
}

bool Engine::EvictAndStart(WaitingGang& w, const std::optional<ChosenPreemption>& chosen, PassContext& ctx) {
  if (!chosen) return false;
  EvictionResult evicted = preemption_.Evict(w, *chosen, ctx);
  if (evicted.awaiting) return false;
  const GangRequest& g = w.req;
  if (evicted.evicted.size() == chosen->decision.victims.size()) {
    Admission a;
    a.key = g.key;
    a.kind = AdmitKind::kPreempting;
    a.pool = chosen->decision.plan.pool;
    a.members = chosen->decision.plan.members;
    a.plan = chosen->decision.plan;
    a.evicted = std::move(evicted.evicted);
    a.why = chosen->why;
    return Start(w, std::move(a), ctx);
  }
  // Someone could not be evicted: the plan may not hold; place afresh.
  auto again = Place(g, ctx);
  if (!again) return false;
  again->kind = AdmitKind::kPreempting;
  again->evicted = std::move(evicted.evicted);
  again->why = chosen->why;
  return Start(w, std::move(*again), ctx);
}

}  // namespace phalanx::scheduling
