// The scheduling engine: queue bookkeeping and the pass (docs/algorithms.md §8.1–8.2);
// heads are in engine_heads.cc, preemption in engine_preemption.cc.
#include "core/scheduling/engine.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/placement/node_score.h"
#include "core/scheduling/engine_internal.h"

namespace phalanx::scheduling {

using namespace internal;  // NOLINT: this module's own helpers

Engine::Engine(EnginePolicy policy, QueueConfig queues) : policy_(std::move(policy)), ledger_(std::move(queues)) {
  if (!policy_.Validate().ok()) policy_ = EnginePolicy::Defaults();
}

Status Engine::SetQueues(QueueConfig queues) {
  PHX_RETURN_IF_ERROR(queues.Validate());
  MaterializeSkippedWhys();  // the texts were made with the old ledger
  MaterializeFitWhys();
  for (auto& [key, w] : waiting_)
    if (w->fit_shape != nullptr) IndexFit(*w, false);  // indexed by queue: again below
  skipped_.clear();
  skipped_before_.clear();
  team_shapes_.clear();
  ledger_ = QueueLedger(std::move(queues));
  by_queue_.clear();
  borrowing_version_.reset();
  reclaim_records_version_.reset();
  for (auto& [key, w] : waiting_) {
    w->ledger_pool = -1;  // indexes of the old ledger
    w->team = -1;
  }
  for (auto& [key, r] : running_) r.team = -1;
  if (!ledger_.enabled()) {
    for (auto& [key, w] : waiting_) IndexFit(*w, true);
    return OkStatus();
  }
  for (auto& [key, w] : waiting_) {
    w->team = ledger_.ResolveIndex(w->req.queue);
    by_queue_[ledger_.QueueName(w->team)].emplace(w->order, w.get());
    IndexShape(*w, true);
    IndexFit(*w, true);
  }
  for (auto& [key, r] : running_) {
    r.team = ledger_.ResolveIndex(r.req.queue);
    ledger_.Add(key, ledger_.QueueName(r.team), r.pool, AmountOf(r.req), r.req.priority, r.started);
  }
  for (const auto& [key, o] : outside_) LedgerAddOutside(key, o);
  return OkStatus();
}

Status Engine::BookOutside(const GangKey& key, std::string_view queue, std::string_view pool, Milli amount,
                           int priority, double started) {
  if (key.empty()) return InvalidArgumentError("booking key must not be empty");
  if (amount < 0) return InvalidArgumentError(fmt::format("booking {}: amount must be >= 0", key.str()));
  if (waiting_.contains(key) || running_.contains(key)) {
    return AlreadyExistsError(fmt::format("gang {} is {} in the engine", key.str(), waiting_.contains(key) ? "waiting" : "running"));
  }
  Outside o{std::string(queue), std::string(pool), amount, priority, started};
  auto [it, added] = outside_.try_emplace(key, o);
  if (!added) {
    if (it->second == o) return OkStatus();  // unchanged: the ledger (and its caches) stay as they are
    it->second = std::move(o);
  }
  LedgerAddOutside(key, it->second);
  return OkStatus();
}

void Engine::UnbookOutside(const GangKey& key) {
  if (outside_.erase(key) == 0) return;
  if (ledger_.enabled()) {
    ledger_.Remove(key);
    borrowing_version_.reset();
  }
}

void Engine::LedgerAddOutside(const GangKey& key, const Outside& o) {
  if (!ledger_.enabled()) return;
  ledger_.Add(key, ledger_.QueueName(ledger_.ResolveIndex(o.queue)), o.pool, o.amount, o.priority, o.started);
  borrowing_version_.reset();
}

Status Engine::Enqueue(GangRequest g) {
  if (g.key.empty()) return InvalidArgumentError("gang key must not be empty");
  if (g.members < 1) return InvalidArgumentError(fmt::format("gang {}: members must be >= 1", g.key.str()));
  if (g.gpus_per_member < 1 || g.gpus_per_member > placement::kMaxGpusPerNode) {
    return InvalidArgumentError(fmt::format("gang {}: gpus per member must be 1..{}", g.key.str(), placement::kMaxGpusPerNode));
  }
  if (g.milli < 1 || g.milli > placement::kMilliPerGpu) {
    return InvalidArgumentError(fmt::format("gang {}: milli must be 1..{}", g.key.str(), placement::kMilliPerGpu));
  }
  if (g.IsShare() && (g.members != 1 || g.gpus_per_member != 1)) {
    return InvalidArgumentError(fmt::format("gang {}: a GPU share is one member of one GPU", g.key.str()));
  }
  if (outside_.contains(g.key)) {
    return AlreadyExistsError(fmt::format("gang {} is booked outside the engine", g.key.str()));
  }
  if (waiting_.contains(g.key) || running_.contains(g.key)) {
    return AlreadyExistsError(fmt::format("gang {} is already {}", g.key.str(), waiting_.contains(g.key) ? "waiting" : "running"));
  }
  if (g.job.empty()) g.job = g.key.str();
  const OrderKey order = OrderOf(g, next_seq_++);
  const GangKey key = g.key;
  auto w = std::make_unique<Waiting>();
  Waiting* ptr = w.get();
  if (ledger_.enabled()) {
    w->team = ledger_.ResolveIndex(g.queue);
    by_queue_[ledger_.QueueName(w->team)].emplace(order, ptr);
  }
  queues_[g.pool].emplace(order, ptr);
  order_.emplace(order, ptr);
  w->req = std::move(g);
  w->order = order;
  if (ptr->team >= 0) IndexShape(*ptr, true);
  if (in_pass_) {
    fit_pending_.push_back(ptr);  // not walked in this pass: out of its sums
  } else {
    IndexFit(*ptr, true);
  }
  unseen_.push_back(key);
  waiting_.emplace(key, std::move(w));
  return OkStatus();
}

Status Engine::Remove(const GangKey& key) {
  auto it = waiting_.find(key);
  if (it == waiting_.end()) return NotFoundError(fmt::format("gang {} is not waiting", key.str()));
  Forget(key);
  return OkStatus();
}

void Engine::Forget(const GangKey& key) {
  auto it = waiting_.find(key);
  if (it == waiting_.end()) return;
  Waiting& w = *it->second;
  if (w.team >= 0) IndexShape(w, false);
  if (w.fit_shape != nullptr) IndexFit(w, false);
  if (!w.awaiting.empty()) --awaiting_gangs_;
  awaiting_orders_.erase(w.order);
  // A pass may still point at it (its cursors walk the indexes): keep it, and its index
  // entries, until the pass ends.
  w.gone = true;
  if (in_pass_) {
    gone_.push_back(std::move(it->second));
  } else {
    Unindex(w);
  }
  waiting_.erase(it);
}

void Engine::Unindex(const Waiting& w) {
  auto q = queues_.find(w.req.pool);
  if (q != queues_.end()) {
    q->second.erase(w.order);
    if (q->second.empty()) queues_.erase(q);
  }
  order_.erase(w.order);
  if (w.team >= 0) {
    if (auto t = by_queue_.find(ledger_.QueueName(w.team)); t != by_queue_.end()) {
      t->second.erase(w.order);
      if (t->second.empty()) by_queue_.erase(t);
    }
  }
}

void Engine::NoteAwaiting(const Waiting& w, bool was) {
  if (was && w.awaiting.empty()) --awaiting_gangs_;
  if (!was && !w.awaiting.empty()) ++awaiting_gangs_;
  SyncAwaiting(w);
}

void Engine::OnFinished(const GangKey& key) {
  auto it = running_.find(key);
  if (it == running_.end()) return;
  EraseRunning(it);
}

void Engine::EraseRunning(std::map<GangKey, Running>::iterator it) {
  if (it->second.reclaimable) --reclaimable_;
  forecast_.Remove(it->first);
  if (ledger_.enabled()) {
    ledger_.Remove(it->first);
    borrowing_version_.reset();
  }
  running_.erase(it);
}

void Engine::AdoptRunning(const GangRequest& g, std::string pool, std::vector<PodUid> pods, double started) {
  Forget(g.key);
  OnFinished(g.key);
  GangRequest req = g;
  if (req.job.empty()) req.job = g.key.str();
  Track(std::move(req), std::move(pool), std::move(pods), started, false);
}

void Engine::Track(GangRequest g, std::string pool, std::vector<PodUid> pods, double started, bool reclaimable) {
  UnbookOutside(g.key);  // one ledger entry per key: running here replaces a booking
  Running r;
  r.pool = std::move(pool);
  r.pods = std::move(pods);
  r.started = started;
  r.expected_end = started + ExpectedDuration(g);
  r.reclaimable = reclaimable;
  if (reclaimable) ++reclaimable_;
  forecast_.Add(g.key, r.pool, r.expected_end, g.IsShare() ? 1 : g.Gpus());
  if (ledger_.enabled()) {
    r.team = ledger_.ResolveIndex(g.queue);
    ledger_.Add(g.key, ledger_.QueueName(r.team), r.pool, AmountOf(g), g.priority, started);
    borrowing_version_.reset();
  }
  const GangKey key = g.key;
  r.req = std::move(g);
  running_.insert_or_assign(key, std::move(r));
}

double Engine::ExpectedDuration(const GangRequest& g) const {
  if (g.duration_hint_s && *g.duration_hint_s > 0) return *g.duration_hint_s;
  return policy_.TierOf(g.priority).default_duration_s;
}

int Engine::FreeGpus(const placement::ClusterState& state, const std::string& pool) const {
  if (pool.empty()) return state.FreeGpus();
  const placement::PoolId id = state.FindPool(pool);
  return id == placement::kNoPool ? 0 : state.pool(id).free_gpus;
}

int Engine::PreemptionsInDay(const std::string& job, double now) const {
  auto it = preempted_at_.find(job);
  if (it == preempted_at_.end()) return 0;
  return static_cast<int>(std::count_if(it->second.begin(), it->second.end(), [&](double t) { return t > now - kDay; }));
}

std::string Engine::WhyWaiting(const GangKey& key) const {
  auto it = waiting_.find(key);
  if (it == waiting_.end()) return "";
  const Waiting& w = *it->second;
  if (w.why_pass != stats_.passes) {
    if (std::optional<std::string> skipped = SkippedWhy(w, stats_.passes)) return *skipped;
  }
  if (std::optional<std::string> skipped = FitWhy(w)) return *skipped;
  return w.why;
}

std::vector<HeadReservation> Engine::Heads() const {
  std::vector<HeadReservation> out;
  for (const auto& [pool, h] : heads_) out.push_back(h);
  return out;
}

// --- the pass -------------------------------------------------------------------------------

void Engine::Pass(double now, EngineDriver& driver, Scope scope) {
  ++stats_.passes;
  next_wake_.reset();
  PassContext ctx{.now = now, .driver = driver, .scope = scope};
  in_pass_ = true;
  pass_seq_limit_ = next_seq_;
  RollSkippedRuns();
  ReforecastOverdue(now);
  BeginFitPass(ctx);
  if (ledger_.enabled()) {
    QueueWalk(ctx);
  } else {
    GlobalWalk(ctx);
  }
  in_pass_ = false;
  EndFitPass(ctx);
  for (const auto& w : gone_) Unindex(*w);
  gone_.clear();
  // Every gang queued before the pass was walked or skipped (a queue with no room): those
  // not seen before count as seen now, as TryGang marks the ones it walks.
  std::erase_if(unseen_, [&](const GangKey& key) {
    auto it = waiting_.find(key);
    if (it == waiting_.end()) return true;
    Waiting& w = *it->second;
    if (std::get<2>(w.order) >= pass_seq_limit_) return false;  // queued during the pass
    MarkSeen(w);
    if (w.since < 0) w.since = now;
    return true;
  });
  heads_.clear();
  for (auto& [pool, head] : ctx.heads) heads_.emplace(pool, std::move(head.reservation));
}

void Engine::GlobalWalk(PassContext& ctx) {
  // One walk in global order (priority, first submission): a gang that takes any pool
  // competes with the pool-bound ones by its place, not after them.
  // The index is walked in place: entries of gangs that start stay until the pass ends
  // (Forget), and gangs queued meanwhile wait for the next pass.
  // Runs of gangs that cannot start are skipped in one step (engine_fit_skip.cc).
  auto it = order_.begin();
  while (it != order_.end()) {
    Waiting& w = *it->second;
    if (std::get<2>(it->first) >= pass_seq_limit_ || w.gone) {
      ++it;
      continue;
    }
    if (FitPassive(w, ctx)) {
      const std::optional<OrderKey> next = SkipFitRun(w, ctx, nullptr);
      it = next ? order_.lower_bound(*next) : order_.end();
      continue;
    }
    TryGang(w, ctx);
    ++fit_step_;
    ++it;
  }
}

std::optional<Admission> Engine::Place(const GangRequest& g, PassContext& ctx) {
  const placement::ClusterState& state = ctx.driver.StateFor(g);
  if (g.IsShare()) {
    placement::PodRequest req{.gpus = 1, .milli = g.milli, .pool = std::nullopt, .priority = g.priority};
    if (!g.pool.empty()) req.pool = g.pool;
    ++stats_.plan_calls;
    auto choice = placement::PickBestNode(state, req);
    if (!choice) return std::nullopt;
    Admission a;
    a.key = g.key;
    a.pool = state.pool(state.node(choice->node).pool).name;
    a.share = std::make_pair(state.node(choice->node).spec.name, std::countr_zero(choice->score.gpus));
    return a;
  }
  if (FreeGpus(state, g.pool) < g.Gpus()) return std::nullopt;
  const auto shape = std::make_tuple(g.pool, g.gpus_per_member, g.milli, g.level);
  if (auto f = ctx.failed.find(shape); f != ctx.failed.end() && g.members >= f->second) return std::nullopt;
  ++stats_.plan_calls;
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

bool Engine::Start(Waiting& w, Admission admission, PassContext& ctx) {
  std::optional<std::vector<PodUid>> pods = ctx.driver.Admit(w.req, admission);
  if (!pods) return false;
  GangRequest req = w.req;
  Forget(req.key);  // `w` is gone from here on
  Track(std::move(req), admission.pool, std::move(*pods), ctx.now, admission.kind == AdmitKind::kPreemptibleBackfill);
  ++stats_.admitted;
  if (admission.backfill()) ++stats_.backfilled;
  return true;
}

void Engine::TryGang(Waiting& w, PassContext& ctx) {
  if (w.gone) return;  // started or removed earlier in this pass
  // Skipped by the last pass (its queue had no room): that pass's reason is its reason.
  std::optional<std::string> refused;
  if (w.why_pass + 1 != stats_.passes) refused = SkippedWhy(w, stats_.passes - 1);
  if (refused) {
    w.why = std::move(*refused);
  } else if (std::optional<std::string> skipped = FitWhy(w)) {
    // Skipped by a full pass since it was last walked (it could not start): that reason.
    w.why = std::move(*skipped);
  }
  w.why_pass = stats_.passes;
  const GangRequest& g = w.req;
  const GangKey& key = g.key;
  const std::string& queue = g.pool;
  // GPUs of gangs before this one that still wait (for "any pool": in every pool).
  int& ahead_in_pool = ctx.ahead_waiting[queue];  // std::map: the reference stays valid
  const int ahead_waiting = queue.empty() ? ctx.ahead_all : ahead_in_pool;
  const bool tried = ctx.scope == Scope::kFull || w.fresh;
  MarkSeen(w);
  if (w.since < 0) w.since = ctx.now;
  const int gpus = g.IsShare() ? 1 : g.Gpus();
  const TierPolicy& tier = policy_.TierOf(g.priority);
  // Team queues: a gang its queue has no room for waits and holds nothing back.
  std::optional<QueueLedger::Fit> quota;
  if (ledger_.enabled() && w.awaiting.empty()) {
    quota = QuotaFor(w, ctx);
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
    if (!ctx.heads.contains(w.reserve_pool)) ctx.heads.emplace(w.reserve_pool, AwaitingHead(w, ctx));
    stays();
  };

  // Backfill rules against the head of the pool the admission runs in: (a) it ends
  // before the head's expected start; (b) the head still fits at that time with the
  // admission's GPUs taken (member capacity per node, not a GPU count: a gang of
  // whole nodes cannot use scattered GPUs); (c) preemptible backfill.
  auto backfill_kind = [&](const Admission& a) -> std::optional<AdmitKind> {
    auto h = ctx.heads.find(a.pool);
    if (h == ctx.heads.end() || h->second.reservation.head == key) return AdmitKind::kFits;
    if (!policy_.backfill) return std::nullopt;
    HeadPlan& head = h->second;
    if (head.reservation.reachable && ctx.now + ExpectedDuration(g) <= head.reservation.expected_start) {
      return AdmitKind::kBackfillEndsInTime;
    }
    if (head.reservation.reachable && head.TakeIfStillFits(a, ctx.driver.state())) return AdmitKind::kBackfillSpareGpus;
    // Spot-like work that checkpoints: the head takes it back when it is ready
    // (only a strictly higher-priority head may).
    if (tier.preemptible_backfill && g.checkpoints && g.priority < head.reservation.priority && !head.awaiting) {
      return AdmitKind::kPreemptibleBackfill;
    }
    return std::nullopt;
  };

  if (tried) {
    // Planned first, then checked against the head of the pool it landed in.
    std::optional<Admission> admission = Place(g, ctx);
    // "Any pool": the planner's pool must have quota room too.
    if (admission && quota && g.pool.empty() &&
        ledger_.Check(w.team, ledger_.PoolIndex(admission->pool), AmountOf(g)) == QueueLedger::Fit::kNoRoom) {
      admission.reset();
      const placement::ClusterState& state = ctx.driver.state();
      for (placement::PoolId p = 0; p < state.PoolCount() && !admission; ++p) {
        if (ledger_.Check(w.team, ledger_.PoolIndex(state.pool(p).name), AmountOf(g)) == QueueLedger::Fit::kNoRoom) {
          continue;
        }
        GangRequest in_pool = g;
        in_pool.pool = state.pool(p).name;
        admission = Place(in_pool, ctx);
      }
    }
    std::optional<AdmitKind> kind;
    if (admission) kind = backfill_kind(*admission);
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
  std::erase_if(w.awaiting, [&](const GangKey& v) { return !running_.contains(v); });
  NoteAwaiting(w, was_awaiting);
  if (!w.awaiting.empty() && ctx.now < w.awaiting_until) {
    next_wake_ = next_wake_ ? std::min(*next_wake_, w.awaiting_until) : w.awaiting_until;
    await_victims();
    return;
  }
  // Waited long enough: it stops waiting for the rest (and may choose other victims).
  const bool still_awaiting = !w.awaiting.empty();
  w.awaiting.clear();
  NoteAwaiting(w, still_awaiting);
  // Within its queue's nominal quota: take back GPUs its queue lent out.
  if (tried && quota == QueueLedger::Fit::kWithinNominal) {
    if (TryQueueReclaim(w, ctx)) return;
    if (!w.awaiting.empty()) {
      await_victims();
      return;
    }
  }
  // The pool it would be the head of: its own, or (any pool) the one where it is
  // expected to start first; none if those have a head already or it has not waited
  // its tier's reserve_after_s yet.
  // A head whose start cannot be predicted (the GPUs it needs are held by work without an
  // expected end) promises nothing and holds nothing back; the shape is remembered for
  // the pass so the replay is not repeated for every such gang.
  std::optional<HeadPlan> head;
  auto plan_head = [&](const std::string& pool) -> std::optional<HeadPlan> {
    const auto shape = std::make_tuple(pool, g.gpus_per_member, g.members);
    if (ctx.unreachable.contains(shape)) return std::nullopt;
    HeadPlan candidate = PlanHead(w, pool, ctx);
    if (candidate.reservation.reachable) return candidate;
    ctx.unreachable.insert(shape);
    return std::nullopt;
  };
  if (!g.IsShare() && tier.reserve_after_s >= 0 && ctx.now - w.since >= tier.reserve_after_s) {
    if (!queue.empty()) {
      if (!ctx.heads.contains(queue)) head = plan_head(queue);
    } else {
      for (placement::PoolId p = 0; p < state.PoolCount(); ++p) {
        const std::string& name = state.pool(p).name;
        if (state.pool(p).nodes.empty() || ctx.heads.contains(name)) continue;
        std::optional<HeadPlan> candidate = plan_head(name);
        if (candidate && (!head || candidate->reservation.expected_start < head->reservation.expected_start)) {
          head = std::move(candidate);
        }
      }
    }
  }
  // A head takes back the preemptible backfill it let in.
  if (tried && head && reclaimable_ > 0 && TryReclaim(w, head->reservation.pool, ctx)) return;
  const int free_now = FreeGpus(state, queue);
  // Its expected wait decides a preemption and is in its reason: both only for a gang
  // this pass tries (a gang not tried keeps its reason).
  double wait = policy_.wait_horizon_s;
  if (tried) {
    const ReleaseForecast::Shadow own = forecast_.When(queue, gpus + ahead_waiting, free_now, ctx.now);
    if (own.reachable) wait = std::min(own.start - ctx.now, policy_.wait_horizon_s);
  }
  std::string preemption;  // what the preemption attempt found, if one ran
  if (tried && !g.IsShare() && tier.target_wait_s >= 0 && wait > tier.target_wait_s &&
      ctx.searches[queue] < policy_.preemption_searches_per_pass) {
    ++ctx.searches[queue];
    w.why.clear();
    if (TryPreempt(w, wait, ctx)) return;
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
    w.why = fmt::format("head of pool {}: needs {} x {} GPUs, {} free; expected start {}{}{}", h.pool, g.members,
                        g.gpus_per_member, free_now,
                        h.reachable ? "in " + Duration(h.expected_start - ctx.now) : "unknown (not enough GPUs end)",
                        policy_.backfill ? fmt::format("; later gangs backfill if they end by then or leave it room "
                                                       "({} spare GPUs then)", h.spare_gpus) : "",
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

}  // namespace phalanx::scheduling
