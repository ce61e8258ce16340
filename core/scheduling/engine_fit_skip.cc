// Gangs that cannot start (engine.h, "gangs that cannot start"): without team queues, a
// pass skips a run of waiting gangs that would only wait, in one step instead of gang by
// gang. Under overload (thousands waiting, a handful of GPUs freed per event) the walk over
// all of them was nearly all of a pass's work, though only a few could run.
//
// A gang is passive at a step of the walk when walking it could only (a) count its GPUs as
// ahead of later gangs and (b) if tried, give it a "does not fit now" / "behind the head"
// reason with its expected wait: it awaits no victims, its tier cannot make it its pool's
// head now (never reserves, the pool has a head, or its shape's head is unreachable this
// pass), and if tried, its tier does not preempt now (never, or the pool's searches are
// spent) and Place would fail without planning (its pool has fewer free GPUs than it
// needs, or a gang of its shape with no more members failed to plan this pass). All of
// these only change at a walked gang, so the shapes are classified once per walked gang.
#include <algorithm>

#include "core/scheduling/engine.h"
#include "core/scheduling/engine_internal.h"

namespace phalanx::scheduling {

using namespace internal;  // NOLINT: this module's own helpers

namespace {
int GpusOf(const GangRequest& g) { return g.IsShare() ? 1 : g.Gpus(); }
}  // namespace

void Engine::IndexFit(Waiting& w, bool add) {
  if (add) {
    const GangRequest& g = w.req;
    auto slot = std::find(fit_slots_.begin(), fit_slots_.end(), g.pool);
    if (slot == fit_slots_.end()) {
      fit_slots_.push_back(g.pool);
      fit_sums_.emplace_back();
      slot = std::prev(fit_slots_.end());
    }
    w.fit_slot = static_cast<int>(slot - fit_slots_.begin());
    FitShapeKey key{g.pool, g.gpus_per_member, g.milli, g.level, g.members, g.priority};
    auto [it, added] = fit_shapes_.try_emplace(std::move(key));
    if (added) {
      it->second.slot = w.fit_slot;
      it->second.tier = &policy_.TierOf(g.priority);
    }
    it->second.gangs.insert(w.order);
    w.fit_shape = &it->second;
    fit_sums_[static_cast<size_t>(w.fit_slot)].Add(w.order, GpusOf(g));
    if (w.fresh) fresh_orders_.insert(w.order);
    fit_changes_.push_back(FitChange{++fit_change_seq_, w.order, w.fit_slot, GpusOf(g)});
    return;
  }
  // Emptied shapes stay until the next pass starts (Waiting::fit_shape of gangs gone
  // during a pass still point at them).
  w.fit_shape->gangs.erase(w.order);
  fit_sums_[static_cast<size_t>(w.fit_slot)].Erase(w.order);
  fresh_orders_.erase(w.order);
  fit_changes_.push_back(FitChange{++fit_change_seq_, w.order, w.fit_slot, -GpusOf(w.req)});
  w.fit_shape = nullptr;
}

void Engine::SyncAwaiting(const Waiting& w) {
  if (w.awaiting.empty()) {
    awaiting_orders_.erase(w.order);
  } else if (w.fit_shape != nullptr) {
    awaiting_orders_.insert(w.order);
  }
}

void Engine::MarkSeen(Waiting& w) {
  if (!w.fresh) return;
  w.fresh = false;
  fresh_orders_.erase(w.order);
}

void Engine::BeginFitPass(PassContext& ctx) {
  std::erase_if(fit_shapes_, [](const auto& e) { return e.second.gangs.empty(); });
  ctx.fit_snaps.assign(fit_slots_.size(), {});
  if (ctx.scope != Scope::kFull || ledger_.enabled()) return;
  // This pass re-decides every gang's reason: the one before last is read by nobody after it.
  fit_runs_before_ = std::move(fit_runs_);
  fit_runs_ = FitRuns{.pass = stats_.passes, .now = ctx.now, .seq_limit = pass_seq_limit_, .runs = {}};
}

void Engine::EndFitPass(PassContext& /*ctx*/) {
  for (Waiting* w : fit_pending_)
    if (!w->gone) IndexFit(*w, true);
  fit_pending_.clear();
  if (fit_runs_.pass == stats_.passes) fit_runs_before_ = FitRuns{};  // a full pass re-decided every reason
  // Changes before the first run still read are read by nobody.
  uint64_t oldest = fit_change_seq_;
  for (const FitRuns* runs : {&fit_runs_, &fit_runs_before_})
    if (!runs->runs.empty()) oldest = std::min(oldest, runs->runs.front().change_seq);
  while (!fit_changes_.empty() && fit_changes_.front().seq <= oldest) fit_changes_.pop_front();
}

void Engine::ClassifyFitShapes(PassContext& ctx) {
  if (ctx.fit_classified == ctx.fit_step) return;
  ctx.fit_classified = ctx.fit_step;
  const placement::ClusterState& state = ctx.driver.state();
  std::vector<int> free(fit_slots_.size(), -1);
  for (auto& [key, shape] : fit_shapes_) {
    if (shape.gangs.empty()) continue;
    const TierPolicy& tier = *shape.tier;
    const bool share = key.milli < placement::kMilliPerGpu;
    shape.headable = !share && tier.reserve_after_s >= 0 &&
                     (key.pool.empty() || (!ctx.heads.contains(key.pool) &&
                                           !ctx.unreachable.contains({key.pool, key.gpus_per_member, key.members})));
    shape.passive_tried = false;
    if (share || shape.headable) continue;
    if (tier.target_wait_s >= 0) {
      auto s = ctx.searches.find(key.pool);
      if (s == ctx.searches.end() || s->second < policy_.preemption_searches_per_pass) continue;
    }
    int& f = free[static_cast<size_t>(shape.slot)];
    if (f < 0) f = FreeGpus(state, key.pool);
    bool fails = f < key.members * key.gpus_per_member;
    if (!fails) {
      auto m = ctx.failed.find(std::make_tuple(key.pool, key.gpus_per_member, key.milli, key.level));
      fails = m != ctx.failed.end() && key.members >= m->second;
    }
    shape.passive_tried = fails;
  }
}

bool Engine::FitPassive(const Waiting& w, PassContext& ctx) {
  if (ledger_.enabled() || w.fit_shape == nullptr || !w.awaiting.empty()) return false;
  const bool full = ctx.scope == Scope::kFull;
  if (!full && w.fresh) return false;  // tried in a pass after arrivals: walked
  ClassifyFitShapes(ctx);
  return full ? w.fit_shape->passive_tried : !w.fit_shape->headable;
}

std::optional<Engine::OrderKey> Engine::SkipFitRun(const Waiting& at, PassContext& ctx) {
  const bool full = ctx.scope == Scope::kFull;
  // The run ends at the next gang that is not passive: of an active shape, awaiting its
  // victims, or (after arrivals only) new.
  std::optional<OrderKey> next;
  auto consider = [&](const std::set<OrderKey>& gangs) {
    auto it = gangs.upper_bound(at.order);
    if (it != gangs.end() && (!next || *it < *next)) next = *it;
  };
  for (const auto& [key, shape] : fit_shapes_) {
    if (full ? !shape.passive_tried : shape.headable) consider(shape.gangs);
  }
  consider(awaiting_orders_);
  if (!full) consider(fresh_orders_);
  FitRun run;
  if (full) {
    run.from = at.order;
    run.to = next.value_or(OrderKey{});
    run.to_end = !next;
    run.change_seq = fit_change_seq_;
    run.ahead_all = ctx.ahead_all;
    run.ahead.assign(fit_slots_.size(), 0);
    run.slots.resize(fit_slots_.size());
  }
  for (size_t s = 0; s < fit_slots_.size(); ++s) {
    const OrderSums<OrderKey>& sums = fit_sums_[s];
    const int64_t below = sums.Below(at.order);
    const auto gpus = static_cast<int>((next ? sums.Below(*next) : sums.Total()) - below);
    if (gpus == 0) continue;
    int& ahead = ctx.ahead_waiting[fit_slots_[s]];
    if (full) {
      run.ahead[s] = ahead;
      run.slots[s] = SnapSlot(static_cast<int>(s), ctx);
    }
    ahead += gpus;
    ctx.ahead_all += gpus;
  }
  if (full) fit_runs_.runs.push_back(std::move(run));
  return next;
}

std::shared_ptr<const Engine::FitSlotSnap> Engine::SnapSlot(int slot, PassContext& ctx) {
  const std::string& pool = fit_slots_[static_cast<size_t>(slot)];
  auto head = ctx.heads.find(pool);
  const bool behind = head != ctx.heads.end();
  const auto key = std::make_tuple(forecast_.version(), behind, stats_.admitted, stats_.preemptions);
  auto& [cached_for, cached] = ctx.fit_snaps[static_cast<size_t>(slot)];
  if (cached && cached_for == key) return cached;
  auto snap = std::make_shared<FitSlotSnap>();
  snap->free_now = FreeGpus(ctx.driver.state(), pool);
  snap->behind = behind;
  if (behind) {
    snap->head = head->second.reservation.head;
    snap->head_start = head->second.reservation.expected_start;
  }
  snap->curve = std::make_shared<const ReleaseForecast::Curve>(forecast_.CurveOf(pool));
  cached_for = key;
  cached = std::move(snap);
  return cached;
}

std::optional<std::string> Engine::FitWhy(const Waiting& w) const {
  if (w.fit_shape == nullptr) return std::nullopt;
  for (const FitRuns* runs : {&fit_runs_, &fit_runs_before_}) {
    if (runs->pass == 0 || runs->pass <= w.why_pass || runs->runs.empty()) continue;
    if (std::get<2>(w.order) >= runs->seq_limit) continue;  // queued after that pass began
    auto run = std::upper_bound(runs->runs.begin(), runs->runs.end(), w.order,
                                [](const OrderKey& o, const FitRun& r) { return o < r.from; });
    if (run == runs->runs.begin()) continue;
    --run;
    if (!run->to_end && !(w.order < run->to)) continue;
    // Its expected wait as the pass computed it: the GPUs ahead of it when the run began,
    // plus those of the run's gangs before it (as they were then: changes since undone).
    const auto slot = static_cast<size_t>(w.fit_slot);
    const bool any = w.req.pool.empty();
    int64_t ahead = any ? run->ahead_all : (slot < run->ahead.size() ? run->ahead[slot] : 0);
    for (size_t s = 0; s < fit_sums_.size(); ++s) {
      if (any || s == slot) ahead += fit_sums_[s].Between(run->from, w.order);
    }
    for (auto c = fit_changes_.rbegin(); c != fit_changes_.rend() && c->seq > run->change_seq; ++c) {
      if ((any || static_cast<size_t>(c->slot) == slot) && !(c->order < run->from) && c->order < w.order) {
        ahead -= c->gpus;
      }
    }
    if (slot >= run->slots.size() || !run->slots[slot]) return std::nullopt;
    const FitSlotSnap& snap = *run->slots[slot];
    const int gpus = GpusOf(w.req);
    double wait = policy_.wait_horizon_s;
    const ReleaseForecast::Shadow own = snap.curve->When(gpus + static_cast<int>(ahead), snap.free_now, runs->now);
    if (own.reachable) wait = std::min(own.start - runs->now, policy_.wait_horizon_s);
    return WaitReason(w.req.pool, snap.behind ? &snap.head : nullptr, snap.head_start, gpus, snap.free_now, wait,
                      runs->now, "");
  }
  return std::nullopt;
}

int64_t Engine::WaitingGpusBefore(const std::string* pool, const OrderKey& order, uint64_t since) const {
  int slot = -1;
  if (pool != nullptr) {
    auto it = std::find(fit_slots_.begin(), fit_slots_.end(), *pool);
    if (it == fit_slots_.end()) return 0;
    slot = static_cast<int>(it - fit_slots_.begin());
  }
  int64_t sum = 0;
  for (size_t s = 0; s < fit_sums_.size(); ++s)
    if (slot < 0 || static_cast<int>(s) == slot) sum += fit_sums_[s].Below(order);
  for (auto c = fit_changes_.rbegin(); c != fit_changes_.rend() && c->seq > since; ++c)
    if ((slot < 0 || c->slot == slot) && c->order < order) sum -= c->gpus;
  return sum;
}

void Engine::MaterializeFitWhys() {
  for (auto& [key, w] : waiting_) {
    if (std::optional<std::string> skipped = FitWhy(*w)) {
      w->why = std::move(*skipped);
      w->why_pass = stats_.passes;
    }
  }
  fit_runs_ = FitRuns{};
  fit_runs_before_ = FitRuns{};
}

}  // namespace phalanx::scheduling
