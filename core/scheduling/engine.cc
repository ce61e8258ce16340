#include "core/scheduling/engine.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/placement/node_score.h"
#include "core/placement/preemption.h"

namespace phalanx::scheduling {
namespace {

constexpr double kDay = 86400;
// How long past its notice a gracefully preempted gang may take before its preemptor
// stops waiting for it (and may choose other victims).
constexpr double kEvictionGrace = 60;

std::string Duration(double seconds) {
  if (!std::isfinite(seconds)) return "never";
  if (seconds < 90) return fmt::format("{:.0f}s", seconds);
  if (seconds < 5400) return fmt::format("{:.0f}m", seconds / 60);
  if (seconds < 2 * kDay) return fmt::format("{:.1f}h", seconds / 3600);
  return fmt::format("{:.1f}d", seconds / kDay);
}

}  // namespace

std::string_view AdmitKindName(AdmitKind kind) {
  switch (kind) {
    case AdmitKind::kFits:
      return "fits";
    case AdmitKind::kBackfillEndsInTime:
      return "backfill (ends before the head starts)";
    case AdmitKind::kBackfillSpareGpus:
      return "backfill (GPUs the head does not need)";
    case AdmitKind::kPreemptibleBackfill:
      return "preemptible backfill";
    case AdmitKind::kPreempting:
      return "preempting";
  }
  return "?";
}

// State of one pass: the pools' heads as promised so far, shape memo, budgets.
struct Engine::PassContext {
  double now = 0;
  EngineDriver& driver;
  Scope scope = Scope::kFull;
  std::map<std::string, HeadPlan> heads;
  // (queue, gpus per member, milli, level) -> fewest members that failed to plan: free
  // GPUs only shrink within a pass (until an eviction, which clears it).
  std::map<std::tuple<std::string, int, int, std::string>, int> failed;
  std::map<std::string, int> searches;  // cost-rule preemption searches per queue
  std::map<std::string, int> ahead_waiting;  // per queue: GPUs of gangs walked that still wait
  int ahead_all = 0;
  // Per queue: cumulative GPUs of the waiting gangs in order, at the pass's start.
  std::map<std::string, std::vector<std::pair<OrderKey, int>>> ahead;
};

Engine::Engine(EnginePolicy policy) : policy_(std::move(policy)) {
  if (!policy_.Validate().ok()) policy_ = EnginePolicy::Defaults();
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
  if (waiting_.contains(g.key) || running_.contains(g.key)) {
    return AlreadyExistsError(fmt::format("gang {} is already {}", g.key.str(), waiting_.contains(g.key) ? "waiting" : "running"));
  }
  if (g.job.empty()) g.job = g.key.str();
  const OrderKey order = OrderOf(g, next_seq_++);
  queues_[g.pool].emplace(order, g.key);
  order_.emplace(order, g.key);
  const GangKey key = g.key;
  Waiting w;
  w.req = std::move(g);
  w.order = order;
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
  auto q = queues_.find(it->second.req.pool);
  if (q != queues_.end()) {
    q->second.erase(it->second.order);
    if (q->second.empty()) queues_.erase(q);
  }
  order_.erase(it->second.order);
  waiting_.erase(it);
}

void Engine::OnFinished(const GangKey& key) {
  auto it = running_.find(key);
  if (it == running_.end()) return;
  EraseRunning(it);
}

void Engine::EraseRunning(std::map<GangKey, Running>::iterator it) {
  if (it->second.reclaimable) --reclaimable_;
  forecast_.Remove(it->first);
  running_.erase(it);
}

void Engine::AdoptRunning(const GangRequest& g, std::string pool, std::vector<PodUid> pods, double started) {
  Forget(g.key);
  OnFinished(g.key);
  Running r;
  r.req = g;
  r.pool = std::move(pool);
  r.pods = std::move(pods);
  r.started = started;
  r.expected_end = started + ExpectedDuration(g);
  if (r.req.job.empty()) r.req.job = g.key.str();
  forecast_.Add(g.key, r.pool, r.expected_end, g.IsShare() ? 1 : g.Gpus());
  running_.insert_or_assign(g.key, std::move(r));
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
  return it == waiting_.end() ? "" : it->second.why;
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
  // One walk in global order (priority, first submission): a gang that takes any pool
  // competes with the pool-bound ones by its place, not after them.
  std::vector<GangKey> keys;
  keys.reserve(order_.size());
  for (const auto& [order, key] : order_) keys.push_back(key);
  for (const GangKey& key : keys) TryGang(key, ctx);
  heads_.clear();
  for (auto& [pool, head] : ctx.heads) heads_.emplace(pool, std::move(head.reservation));
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
  placement::GangSpec spec;
  spec.key = g.key;
  spec.members = g.members;
  spec.gpus_per_member = g.gpus_per_member;
  if (!g.pool.empty()) spec.pool = g.pool;
  if (g.mode != placement::TopologyMode::kNone && state.LevelIndex(g.level) >= 0) {
    spec.level = g.level;
    spec.mode = g.mode;
  }
  ++stats_.plan_calls;
  auto planned = placement::PlanGang(state, spec);
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
  const GangKey key = w.req.key;
  Running r;
  r.req = w.req;
  r.pool = admission.pool;
  r.pods = std::move(*pods);
  r.started = ctx.now;
  r.reclaimable = admission.kind == AdmitKind::kPreemptibleBackfill;
  if (r.reclaimable) ++reclaimable_;
  r.expected_end = ctx.now + ExpectedDuration(r.req);
  forecast_.Add(key, r.pool, r.expected_end, r.req.IsShare() ? 1 : r.req.Gpus());
  Forget(key);  // `w` is gone from here on
  running_.insert_or_assign(key, std::move(r));
  ++stats_.admitted;
  if (admission.backfill()) ++stats_.backfilled;
  return true;
}

void Engine::TryGang(const GangKey& key, PassContext& ctx) {
  auto wit = waiting_.find(key);
  if (wit == waiting_.end()) return;
  Waiting& w = wit->second;
  const GangRequest& g = w.req;
  const std::string& queue = g.pool;
  // GPUs of gangs before this one that still wait (for "any pool": in every pool).
  const int ahead_waiting = queue.empty() ? ctx.ahead_all : ctx.ahead_waiting[queue];
  {
    const bool tried = ctx.scope == Scope::kFull || w.fresh;
    w.fresh = false;
    if (w.since < 0) w.since = ctx.now;
    const int gpus = g.IsShare() ? 1 : g.Gpus();
    const TierPolicy& tier = policy_.TierOf(g.priority);

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
      // Ending before the head needs no plan to rule out; anything else is planned, then
      // checked against the head of the pool it landed in.
      std::optional<Admission> admission = Place(g, ctx);
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
    std::erase_if(w.awaiting, [&](const GangKey& v) { return !running_.contains(v); });
    if (!w.awaiting.empty() && ctx.now < w.awaiting_until) {
      next_wake_ = next_wake_ ? std::min(*next_wake_, w.awaiting_until) : w.awaiting_until;
      if (!ctx.heads.contains(w.reserve_pool)) ctx.heads.emplace(w.reserve_pool, AwaitingHead(w, ctx));
      ctx.ahead_waiting[queue] += gpus;
      ctx.ahead_all += gpus;
      return;
    }
    w.awaiting.clear();
    // The pool it would be the head of: its own, or (any pool) the one where it is
    // expected to start first; none if those have a head already or it has not waited
    // its tier's reserve_after_s yet.
    std::optional<HeadPlan> head;
    if (!g.IsShare() && tier.reserve_after_s >= 0 && ctx.now - w.since >= tier.reserve_after_s) {
      if (!queue.empty()) {
        if (!ctx.heads.contains(queue)) head = PlanHead(w, queue, ctx);
      } else {
        for (placement::PoolId p = 0; p < state.PoolCount(); ++p) {
          const std::string& name = state.pool(p).name;
          if (state.pool(p).nodes.empty() || ctx.heads.contains(name)) continue;
          HeadPlan candidate = PlanHead(w, name, ctx);
          if (!candidate.reservation.reachable) continue;
          if (!head || candidate.reservation.expected_start < head->reservation.expected_start) head = std::move(candidate);
        }
      }
    }
    // A head takes back the preemptible backfill it let in.
    if (tried && head && reclaimable_ > 0 && TryReclaim(w, head->reservation.pool, ctx)) return;
    const int free_now = FreeGpus(state, queue);
    const ReleaseForecast::Shadow own = forecast_.When(queue, gpus + ahead_waiting, free_now, ctx.now);
    const double wait = own.reachable ? std::min(own.start - ctx.now, policy_.wait_horizon_s) : policy_.wait_horizon_s;
    std::string preemption;  // what the preemption attempt found, if one ran
    if (tried && !g.IsShare() && tier.target_wait_s >= 0 && wait > tier.target_wait_s &&
        ctx.searches[queue] < policy_.preemption_searches_per_pass) {
      ++ctx.searches[queue];
      w.why.clear();
      if (TryPreempt(w, wait, ctx)) return;
      preemption = std::move(w.why);
      if (!w.awaiting.empty()) {
        // Its victims are checkpointing: from now on their GPUs are kept for it.
        if (!ctx.heads.contains(w.reserve_pool)) ctx.heads.emplace(w.reserve_pool, AwaitingHead(w, ctx));
        w.why = std::move(preemption);
        ctx.ahead_waiting[queue] += gpus;
        ctx.ahead_all += gpus;
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
      if (h != ctx.heads.end() && h->second.reservation.head != key) {
        w.why = fmt::format("behind the head of pool {} ({}, expected start in {}); expected wait {}{}", queue,
                            h->second.reservation.head.str(), Duration(h->second.reservation.expected_start - ctx.now),
                            Duration(wait), suffix);
      } else {
        w.why = fmt::format("does not fit now ({} GPUs, {} free); expected wait {}{}", gpus, free_now, Duration(wait), suffix);
      }
    }
    ctx.ahead_waiting[queue] += gpus;
    ctx.ahead_all += gpus;
  }
}

// --- the head's reservation ---------------------------------------------------------------

namespace {

int MembersOn(int free_gpus, int per_member) { return free_gpus / per_member; }

int GpusOn(const Admission& a, const placement::ClusterState& state, std::unordered_map<placement::NodeIndex, int>* out) {
  int total = 0;
  if (a.share) {
    if (auto n = state.FindNode(a.share->first)) (*out)[*n] += 1;
    return 1;
  }
  for (const placement::MemberPlacement& m : a.members) {
    if (auto n = state.FindNode(m.node)) {
      (*out)[*n] += std::popcount(m.gpus);
      total += std::popcount(m.gpus);
    }
  }
  return total;
}

}  // namespace

bool Engine::HeadPlan::TakeIfStillFits(const Admission& a, const placement::ClusterState& state) {
  std::unordered_map<placement::NodeIndex, int> taken;
  GpusOn(a, state, &taken);
  int lost = 0;
  for (const auto& [node, gpus] : taken) {
    auto it = free_at_start.find(node);
    const int f = it == free_at_start.end() ? 0 : it->second;
    lost += MembersOn(f, per_member) - MembersOn(std::max(0, f - gpus), per_member);
  }
  if (capacity_at_start - lost < reservation.members) return false;
  capacity_at_start -= lost;
  for (const auto& [node, gpus] : taken) {
    auto it = free_at_start.find(node);
    if (it == free_at_start.end()) continue;
    reservation.spare_gpus -= std::min(gpus, it->second);
    it->second = std::max(0, it->second - gpus);
  }
  return true;
}

// A preemptor waiting for its victims' checkpoints holds their pool's head; nothing
// preemptible may backfill there (it would only be evicted again when the victims stop).
Engine::HeadPlan Engine::AwaitingHead(const Waiting& w, PassContext& ctx) const {
  HeadPlan head = PlanHead(w, w.reserve_pool, ctx);
  head.awaiting = true;
  return head;
}

// The head's expected start: replay the pool's running gangs ending in expected-end
// order onto the nodes' free GPUs until the head's members fit (whole members per node).
Engine::HeadPlan Engine::PlanHead(const Waiting& w, const std::string& pool_name, PassContext& ctx) const {
  const GangRequest& g = w.req;
  const placement::ClusterState& state = ctx.driver.state();
  HeadPlan head;
  head.per_member = g.gpus_per_member;
  head.reservation = HeadReservation{.pool = pool_name, .head = g.key, .priority = g.priority, .gpus = g.Gpus(),
                                     .members = g.members, .expected_start = ctx.now, .reachable = false, .spare_gpus = 0};
  const placement::PoolId pool = state.FindPool(pool_name);
  if (pool == placement::kNoPool) return head;
  int free_total = 0;
  for (placement::NodeIndex n : state.pool(pool).nodes) {
    const int f = std::popcount(state.node(n).free);
    head.free_at_start[n] = f;
    head.capacity_at_start += MembersOn(f, g.gpus_per_member);
    free_total += f;
  }
  auto free_on = [&](placement::NodeIndex node, int gpus) {
    auto it = head.free_at_start.find(node);
    if (it == head.free_at_start.end()) return;
    const int before = MembersOn(it->second, g.gpus_per_member);
    it->second += gpus;
    free_total += gpus;
    head.capacity_at_start += MembersOn(it->second, g.gpus_per_member) - before;
  };
  auto release = [&](const Running& r) {
    for (const PodUid& uid : r.pods) {
      const placement::PodAllocation* p = state.FindPod(uid);
      if (p == nullptr || p->milli < placement::kMilliPerGpu) continue;  // a share frees no whole GPU alone
      free_on(p->node, std::popcount(p->gpus));
    }
    // Members admitted but not bound yet hold the gang's reservation (the extender).
    if (const placement::Reservation* res = state.FindReservation(r.req.key)) {
      for (size_t m = 0; m < res->members.size(); ++m) {
        if (m < res->committed.size() && res->committed[m]) continue;
        if (auto node = state.FindNode(res->members[m].node)) free_on(*node, std::popcount(res->members[m].gpus));
      }
    }
  };
  // Preemptible backfill below it is taken back when the head is ready: count its GPUs
  // as free from the start.
  for (const auto& [key, r] : running_)
    if (r.pool == pool_name && r.reclaimable && r.req.priority < g.priority) release(r);
  double start = ctx.now;
  if (head.capacity_at_start < g.members) {
    // Running gangs of this pool by expected end (overdue ones: soon, not in the past).
    std::vector<std::pair<double, const Running*>> ends;
    for (const auto& [key, r] : running_)
      if (r.pool == pool_name && !(r.reclaimable && r.req.priority < g.priority)) ends.emplace_back(std::max(r.expected_end, ctx.now + forecast_.overdue_grace_s), &r);
    std::sort(ends.begin(), ends.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : a.second->req.key < b.second->req.key;
    });
    size_t i = 0;
    while (i < ends.size() && head.capacity_at_start < g.members) {
      const double t = ends[i].first;
      for (; i < ends.size() && ends[i].first == t; ++i) release(*ends[i].second);  // same instant together
      start = t;
    }
    if (head.capacity_at_start < g.members) return head;  // unreachable
  }
  head.reservation.expected_start = start;
  head.reservation.reachable = true;
  head.reservation.spare_gpus = std::max(0, free_total - g.Gpus());
  return head;
}

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
  placement::GangSpec spec;
  spec.key = g.key;
  spec.members = g.members;
  spec.gpus_per_member = g.gpus_per_member;
  spec.pool = pool;
  if (g.mode != placement::TopologyMode::kNone && ctx.driver.state().LevelIndex(g.level) >= 0) {
    spec.level = g.level;
    spec.mode = g.mode;
  }
  placement::PreemptionRequest req{.preemptor = spec, .priority = g.priority, .candidates = candidates};
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
  placement::GangSpec spec;
  spec.key = g.key;
  spec.members = g.members;
  spec.gpus_per_member = g.gpus_per_member;
  if (!g.pool.empty()) spec.pool = g.pool;
  if (g.mode != placement::TopologyMode::kNone && ctx.driver.state().LevelIndex(g.level) >= 0) {
    spec.level = g.level;
    spec.mode = g.mode;
  }
  placement::PreemptionRequest req{.preemptor = spec, .priority = g.priority, .candidates = candidates};
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
