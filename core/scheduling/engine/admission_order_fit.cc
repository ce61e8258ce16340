// Gangs that cannot start (admission_order.h, "gangs that cannot start"): without team queues, a
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
#include <climits>
#include <span>
#include <vector>

#include "core/scheduling/engine/admission_order.h"
#include "core/scheduling/engine/pass_context.h"

namespace phalanx::scheduling {

using namespace internal;  // NOLINT: this module's own helpers

namespace {
int GpusOf(const GangRequest& g) { return g.IsShare() ? 1 : g.Gpus(); }
}  // namespace

void AdmissionOrder::IndexFit(WaitingGang& w, bool add) {
  if (add) {
    const GangRequest& g = w.req;
    const std::pair<int, std::string> slot_key{w.team, g.pool};
    auto slot = std::find(fit_slots_.begin(), fit_slots_.end(), slot_key);
    if (slot == fit_slots_.end()) {
      fit_slots_.push_back(slot_key);
      fit_sums_.emplace_back();
      slot = std::prev(fit_slots_.end());
    }
    w.fit_slot = static_cast<int>(slot - fit_slots_.begin());
    auto [it, added] = fit_shapes_.try_emplace(FitKeyOf(w));
    if (added) {
      it->second.slot = w.fit_slot;
      it->second.tier = &s_->policy.TierOf(g.priority);
      it->second.key = &it->first;
    }
    it->second.gangs.Add(w.order, GpusOf(g));
    ++it->second.changes;
    w.fit_shape = &it->second;
    fit_sums_[static_cast<size_t>(w.fit_slot)].Add(w.order, GpusOf(g));
    if (w.fresh) fresh_orders_.insert(w.order);
    fit_changes_.push_back(FitChange{++fit_change_seq_, w.order, w.fit_slot, GpusOf(g), AmountOf(g)});
    return;
  }
  // Emptied shapes stay until the next pass starts (WaitingGang::fit_shape of gangs gone
  // during a pass still point at them).
  w.fit_shape->gangs.Erase(w.order);
  ++w.fit_shape->changes;
  fit_sums_[static_cast<size_t>(w.fit_slot)].Erase(w.order);
  fresh_orders_.erase(w.order);
  fit_changes_.push_back(FitChange{++fit_change_seq_, w.order, w.fit_slot, -GpusOf(w.req), AmountOf(w.req)});
  w.fit_shape = nullptr;
}

FitShapeKey AdmissionOrder::FitKeyOf(const WaitingGang& w) {
  const GangRequest& g = w.req;
  return FitShapeKey{w.team, g.pool, g.gpus_per_member, g.milli, g.level, g.members, g.priority};
}

std::map<FitShapeKey, FitShape>::iterator AdmissionOrder::TeamShapes(int team) {
  return fit_shapes_.lower_bound(FitShapeKey{team, "", INT_MIN, INT_MIN, "", INT_MIN, INT_MIN});
}

std::map<FitShapeKey, FitShape>::const_iterator AdmissionOrder::TeamShapes(int team) const {
  return fit_shapes_.lower_bound(FitShapeKey{team, "", INT_MIN, INT_MIN, "", INT_MIN, INT_MIN});
}

void AdmissionOrder::MarkSeen(WaitingGang& w) {
  if (!w.fresh) return;
  w.fresh = false;
  fresh_orders_.erase(w.order);
}

void AdmissionOrder::BeginFitPass(PassContext& ctx) {
  std::erase_if(fit_shapes_, [](const auto& e) { return e.second.gangs.empty(); });
  ctx.fit_snaps.assign(fit_slots_.size(), {});
  ctx.fit_free.assign(fit_slots_.size(), {~uint64_t{0}, 0});
  ++fit_step_;
  if (ctx.scope != PassScope::kFull) return;
  // This pass re-decides every gang's reason: the one before last is read by nobody after it.
  fit_runs_before_ = std::move(fit_runs_);
  fit_runs_ = FitRuns{.pass = s_->stats.passes, .now = ctx.now, .seq_limit = s_->pass_seq_limit, .runs = {}};
  fit_runs_.runs.resize(s_->ledger.enabled() ? s_->ledger.config().queues.size() + 1 : 1);
}

void AdmissionOrder::EndFitPass(PassContext& /*ctx*/) {
  for (WaitingGang* w : fit_pending_)
    if (!w->gone) IndexFit(*w, true);
  fit_pending_.clear();
  if (fit_runs_.pass == s_->stats.passes) fit_runs_before_ = FitRuns{};  // a full pass re-decided every reason
  // Changes before the first run still read are read by nobody.
  uint64_t oldest = fit_change_seq_;
  for (const FitRuns* runs : {&fit_runs_, &fit_runs_before_})
    for (const std::vector<FitRun>& team : runs->runs)
      if (!team.empty()) oldest = std::min(oldest, team.front().change_seq);
  while (!fit_changes_.empty() && fit_changes_.front().seq <= oldest) fit_changes_.pop_front();
}

void AdmissionOrder::ClassifyFitShape(const FitShapeKey& key, FitShape& shape, PassContext& ctx) {
  if (shape.classified == fit_step_) return;
  shape.classified = fit_step_;
  const placement::ClusterState& state = ctx.driver.state();
  {
    const TierPolicy& tier = *shape.tier;
    const bool share = key.milli < placement::kMilliPerGpu;
    shape.headable = !share && tier.reserve_after_s >= 0 &&
                     (key.pool.empty() || (!ctx.heads.contains(key.pool) &&
                                           !ctx.unreachable.contains({key.pool, key.gpus_per_member, key.members})));
    shape.passive_tried = false;
    std::optional<QueueLedger::Fit> quota;
    if (key.team >= 0) {
      // QuotaFor's verdict and the walk's turn (QueueWalk), for any gang of the shape.
      const Milli amount = share ? key.milli : static_cast<Milli>(key.members * key.gpus_per_member) * kMilliGpu;
      if (!key.pool.empty()) {
        quota = s_->ledger.Check(key.team, s_->ledger.PoolIndex(key.pool), amount);
        shape.within = quota == QueueLedger::Fit::kWithinNominal;
      } else {
        for (placement::PoolId p = 0; p < state.PoolCount(); ++p) {
          if (state.pool(p).nodes.empty()) continue;
          const QueueLedger::Fit fit = s_->ledger.Check(key.team, s_->ledger.PoolIndex(state.pool(p).name), amount);
          if (!quota || fit < *quota) quota = fit;
        }
        shape.within = s_->ledger.WithinNominalOfAnyPool(key.team, amount);
      }
      shape.room = quota && *quota != QueueLedger::Fit::kNoRoom;
      if (!shape.room) return;
    }
    if (share || shape.headable) return;
    if (tier.target_wait_s >= 0) {
      auto s = ctx.searches.find(key.pool);
      if (s == ctx.searches.end() || s->second < s_->policy.preemption_searches_per_pass) return;
    }
    if (quota == QueueLedger::Fit::kWithinNominal) {
      // It would take back what its queue lent, unless its pool's reclaims are spent.
      if (key.pool.empty()) return;
      auto s = ctx.reclaim_searches.find(key.pool);
      if (s == ctx.reclaim_searches.end() || s->second < s_->policy.preemption_searches_per_pass) return;
    }
    auto& [free_at, f] = ctx.fit_free[static_cast<size_t>(shape.slot)];
    if (free_at != fit_step_) {
      free_at = fit_step_;
      f = EngineState::FreeGpus(state, key.pool);
    }
    bool fails = f < key.members * key.gpus_per_member;
    if (!fails) {
      auto m = ctx.failed.find(std::make_tuple(key.pool, key.gpus_per_member, key.milli, key.level));
      fails = m != ctx.failed.end() && key.members >= m->second;
    }
    shape.passive_tried = fails;
  }
}

bool AdmissionOrder::FitPassive(const WaitingGang& w, PassContext& ctx) {
  if (w.fit_shape == nullptr || !w.awaiting.empty()) return false;
  const bool full = ctx.scope == PassScope::kFull;
  if (!full && w.fresh) return false;  // tried in a pass after arrivals: walked
  ClassifyFitShape(*w.fit_shape->key, *w.fit_shape, ctx);
  const FitShape& shape = *w.fit_shape;
  if (!shape.room) return false;  // its queue refuses it: SkipNoRoomRun's
  return full ? shape.passive_tried : !shape.headable;
}

std::optional<OrderKey> FitShape::After(const OrderKey& order) {
  if (after_changes_ != changes || order < after_from_ || (after_ && !(order < *after_))) {
    after_ = gangs.After(order);
    after_from_ = order;
    after_changes_ = changes;
  }
  return after_;
}

std::optional<OrderKey> AdmissionOrder::SkipFitRun(const WaitingGang& at, PassContext& ctx, RoomCache* room) {
  const bool full = ctx.scope == PassScope::kFull;
  const int team = at.team;
  const bool within = at.fit_shape->within;
  // A full pass's run also takes the queue's gangs without quota room that have `at`'s turn
  // (QuotaFor refuses them: a reason from the ledger, nothing counted ahead).
  const bool take_refused = full && team >= 0 && room != nullptr && static_cast<size_t>(team) < team_shapes_.size();
  // The run ends at the next gang of the queue that is not passive: of an active shape,
  // awaiting its victims, (after arrivals only) new, or (team queues) without quota room
  // or with another turn than `at` (the queue would not keep the turn through it).
  std::optional<OrderKey> next;
  auto consider = [&](std::optional<OrderKey> o) {
    if (o && (!next || *o < *next)) next = o;
  };
  auto first_after = [&](const std::set<OrderKey>& gangs) {
    auto it = gangs.upper_bound(at.order);
    return it == gangs.end() ? std::nullopt : std::optional<OrderKey>(*it);
  };
  std::vector<const FitShape*> refused;  // in the run: without room
  for (auto it = TeamShapes(team); it != fit_shapes_.end() && it->first.team == team; ++it) {
    const FitShapeKey& key = it->first;
    FitShape& shape = it->second;
    if (shape.gangs.empty()) continue;
    ClassifyFitShape(key, shape, ctx);
    const bool same_turn = team < 0 || shape.within == within;
    if (same_turn && shape.room && (full ? shape.passive_tried : !shape.headable)) continue;
    if (same_turn && !shape.room && take_refused) {
      refused.push_back(&shape);
      continue;
    }
    consider(shape.After(at.order));
  }
  consider(first_after(s_->awaiting_orders));  // of every queue: a stop early in this one is only a step
  if (!full) consider(first_after(fresh_orders_));
  auto in_run = [&](const OrderSums<OrderKey>& sums) {
    return (next ? sums.Below(*next) : sums.Total()) - sums.Below(at.order);
  };
  // GPUs of the run's refused gangs, by slot.
  std::vector<int64_t> refused_gpus(fit_slots_.size(), 0);
  bool any_refused = false;
  for (const FitShape* shape : refused) {
    const int64_t gpus = in_run(shape->gangs);
    refused_gpus[static_cast<size_t>(shape->slot)] += gpus;
    any_refused = any_refused || gpus > 0;
  }
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
  if (any_refused) {
    RoomTexts(team, *room);
    run.refused = room->texts;
    SkippedRuns& runs = skipped_[static_cast<size_t>(team)];
    runs.pass = s_->stats.passes;
    runs.runs.push_back(SkippedRun{.from = at.order, .to = next.value_or(OrderKey{}), .to_end = !next,
                                   .seq_limit = s_->pass_seq_limit, .texts = room->texts});
  }
  for (size_t s = 0; s < fit_slots_.size(); ++s) {
    if (fit_slots_[s].first != team) continue;
    const auto gpus = static_cast<int>(in_run(fit_sums_[s]) - refused_gpus[s]);
    if (gpus == 0) continue;
    int& ahead = ctx.ahead_waiting[fit_slots_[s].second];
    if (full) {
      run.ahead[s] = ahead;
      run.slots[s] = SnapSlot(static_cast<int>(s), ctx);
    }
    ahead += gpus;
    ctx.ahead_all += gpus;
  }
  if (full) {
    fit_runs_.runs[static_cast<size_t>(team + 1)].push_back(std::move(run));
  } else if (team >= 0) {
    // Not tried, they keep their reasons: those the last pass recorded for the ones it
    // skipped for want of quota room (SkippedWhy) carry over to this pass.
    const auto t = static_cast<size_t>(team);
    if (t < skipped_before_.size() && skipped_before_[t].pass + 1 == s_->stats.passes) {
      // The runs are in queue order and disjoint: those that end by `at` are a prefix.
      const std::vector<SkippedRun>& before = skipped_before_[t].runs;
      auto first = std::partition_point(before.begin(), before.end(),
                                        [&](const SkippedRun& r) { return !r.to_end && !(at.order < r.to); });
      for (const SkippedRun& r : std::span<const SkippedRun>(first, before.end())) {
        if (next && !(r.from < *next)) break;
        SkippedRun copy = r;
        copy.from = std::max(r.from, at.order);
        if (next && (r.to_end || *next < r.to)) {
          copy.to = *next;
          copy.to_end = false;
        }
        skipped_[t].pass = s_->stats.passes;
        skipped_[t].runs.push_back(std::move(copy));
      }
    }
  }
  return next;
}

std::shared_ptr<const FitSlotSnap> AdmissionOrder::SnapSlot(int slot, PassContext& ctx) {
  const std::string& pool = fit_slots_[static_cast<size_t>(slot)].second;
  auto head = ctx.heads.find(pool);
  const bool behind = head != ctx.heads.end();
  const auto key = std::make_tuple(s_->forecast.version(), behind, s_->stats.admitted, s_->stats.preemptions);
  auto& [cached_for, cached] = ctx.fit_snaps[static_cast<size_t>(slot)];
  if (cached && cached_for == key) return cached;
  auto snap = std::make_shared<FitSlotSnap>();
  snap->free_now = EngineState::FreeGpus(ctx.driver.state(), pool);
  snap->behind = behind;
  if (behind) {
    snap->head = head->second.reservation.head;
    snap->head_start = head->second.reservation.expected_start;
  }
  snap->curve = std::make_shared<const ReleaseForecast::Curve>(s_->forecast.CurveOf(pool));
  cached_for = key;
  cached = std::move(snap);
  return cached;
}

std::optional<std::string> AdmissionOrder::FitWhy(const WaitingGang& w) const {
  if (w.fit_shape == nullptr) return std::nullopt;
  for (const FitRuns* runs : {&fit_runs_, &fit_runs_before_}) {
    if (runs->pass == 0 || runs->pass <= w.why_pass) continue;
    if (std::get<2>(w.order) >= runs->seq_limit) continue;  // queued after that pass began
    const auto team = static_cast<size_t>(w.team + 1);
    if (team >= runs->runs.size()) continue;
    const std::vector<FitRun>& list = runs->runs[team];
    auto run = std::upper_bound(list.begin(), list.end(), w.order,
                                [](const OrderKey& o, const FitRun& r) { return o < r.from; });
    if (run == list.begin()) continue;
    --run;
    if (!run->to_end && !(w.order < run->to)) continue;
    // Its expected wait as the pass computed it: the GPUs ahead of it when the run began,
    // plus those of the run's gangs before it (as they were then: changes since undone).
    const auto slot = static_cast<size_t>(w.fit_slot);
    const bool any = w.req.pool.empty();
    auto counts = [&](size_t s) { return any ? fit_slots_[s].first == w.team : s == slot; };
    // Gangs the run skipped without quota room count nothing.
    auto refused = [&](const std::string& pool, Milli amount) {
      return run->refused && run->refused->contains({pool, amount});
    };
    int64_t ahead = any ? run->ahead_all : (slot < run->ahead.size() ? run->ahead[slot] : 0);
    for (size_t s = 0; s < fit_sums_.size(); ++s)
      if (counts(s)) ahead += fit_sums_[s].Between(run->from, w.order);
    if (run->refused) {
      for (auto it = TeamShapes(w.team); it != fit_shapes_.end() && it->first.team == w.team; ++it) {
        const auto& [key, shape] = *it;
        const Milli amount = key.milli < placement::kMilliPerGpu
                                 ? key.milli
                                 : static_cast<Milli>(key.members * key.gpus_per_member) * kMilliGpu;
        if (counts(static_cast<size_t>(shape.slot)) && refused(key.pool, amount)) {
          ahead -= shape.gangs.Between(run->from, w.order);
        }
      }
    }
    for (auto c = fit_changes_.rbegin(); c != fit_changes_.rend() && c->seq > run->change_seq; ++c) {
      const auto s = static_cast<size_t>(c->slot);
      if (counts(s) && !refused(fit_slots_[s].second, c->amount) && !(c->order < run->from) && c->order < w.order) {
        ahead -= c->gpus;
      }
    }
    if (slot >= run->slots.size() || !run->slots[slot]) return std::nullopt;
    const FitSlotSnap& snap = *run->slots[slot];
    const int gpus = GpusOf(w.req);
    double wait = s_->policy.wait_horizon_s;
    const ReleaseForecast::Shadow own = snap.curve->When(gpus + static_cast<int>(ahead), snap.free_now, runs->now);
    if (own.reachable) wait = std::min(own.start - runs->now, s_->policy.wait_horizon_s);
    return WaitReason(w.req.pool, snap.behind ? &snap.head : nullptr, snap.head_start, gpus, snap.free_now, wait,
                      runs->now, "");
  }
  return std::nullopt;
}

int64_t AdmissionOrder::WaitingGpusBefore(const std::string* pool, const OrderKey& order, uint64_t since) const {
  // Every queue's gangs of the pool.
  auto counts = [&](int s) { return pool == nullptr || fit_slots_[static_cast<size_t>(s)].second == *pool; };
  int64_t sum = 0;
  for (size_t s = 0; s < fit_sums_.size(); ++s)
    if (counts(static_cast<int>(s))) sum += fit_sums_[s].Below(order);
  for (auto c = fit_changes_.rbegin(); c != fit_changes_.rend() && c->seq > since; ++c)
    if (counts(c->slot) && c->order < order) sum -= c->gpus;
  return sum;
}

void AdmissionOrder::MaterializeFitWhys() {
  for (auto& [key, w] : s_->waiting) {
    if (std::optional<std::string> skipped = FitWhy(*w)) {
      w->why = std::move(*skipped);
      w->why_pass = s_->stats.passes;
    }
  }
  fit_runs_ = FitRuns{};
  fit_runs_before_ = FitRuns{};
}

}  // namespace phalanx::scheduling
