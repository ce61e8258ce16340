// Heads: a waiting gang's expected start (node-level replay of expected ends) and the
// room backfill may take without delaying it (docs/algorithms.md §8.2).
#include "core/scheduling/engine/backfill.h"

#include <algorithm>
#include <bit>
#include <optional>
#include <unordered_map>

#include "core/scheduling/engine/pass_context.h"

namespace phalanx::scheduling {

using namespace internal;  // NOLINT: this module's own helpers

// --- the head's reservation ---------------------------------------------------------------

namespace {

int MembersOn(int free_gpus, int per_member) { return free_gpus / per_member; }

int GpusOn(const Admission& a, const placement::ClusterState& state,
           std::unordered_map<placement::NodeIndex, int>* out) {
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

bool HeadPlan::TakeIfStillFits(const Admission& a, const placement::ClusterState& state) {
  std::unordered_map<placement::NodeIndex, int> taken;
  GpusOn(a, state, &taken);
  int lost = 0;
  auto free_of = [&](placement::NodeIndex node) -> int* {
    const auto i = static_cast<size_t>(node);
    return i < free_at_start.size() && free_at_start[i] >= 0 ? &free_at_start[i] : nullptr;
  };
  for (const auto& [node, gpus] : taken) {
    const int* f = free_of(node);
    const int free = f ? *f : 0;
    lost += MembersOn(free, per_member) - MembersOn(std::max(0, free - gpus), per_member);
  }
  if (capacity_at_start - lost < reservation.members) return false;
  capacity_at_start -= lost;
  for (const auto& [node, gpus] : taken) {
    int* f = free_of(node);
    if (f == nullptr) continue;
    reservation.spare_gpus -= std::min(gpus, *f);
    *f = std::max(0, *f - gpus);
  }
  return true;
}

HeadPlan Backfill::AwaitingHead(const WaitingGang& w, PassContext& ctx) const {
  HeadPlan head = PlanHead(w, w.reserve_pool, ctx);
  head.awaiting = true;
  return head;
}

void Backfill::HoldAwaitedPools(PassContext& ctx) const {
  if (s_->awaiting_gangs == 0) return;
  for (const OrderKey& order : s_->awaiting_orders) {
    auto it = s_->by_order.find(order);
    if (it == s_->by_order.end()) continue;
    const WaitingGang& w = *it->second;
    if (w.gone || w.awaiting.empty() || ctx.heads.contains(w.reserve_pool)) continue;
    const bool victims_gone = std::none_of(w.awaiting.begin(), w.awaiting.end(),
                                           [&](const GangKey& v) { return s_->running.contains(v); });
    if (ctx.now < w.awaiting_until || victims_gone) ctx.heads.emplace(w.reserve_pool, AwaitingHead(w, ctx));
  }
}

// The head's expected start: replay the pool's running gangs ending in expected-end
// order onto the nodes' free GPUs until the head's members fit (whole members per node).
HeadPlan Backfill::PlanHead(const WaitingGang& w, const std::string& pool_name,
                            PassContext& ctx) const {
  const GangRequest& g = w.req;
  const placement::ClusterState& state = ctx.driver.state();
  HeadPlan head;
  head.per_member = g.gpus_per_member;
  head.reservation = HeadReservation{.pool = pool_name,
                                     .head = g.key,
                                     .priority = g.priority,
                                     .gpus = g.Gpus(),
                                     .members = g.members,
                                     .expected_start = ctx.now,
                                     .reachable = false,
                                     .spare_gpus = 0};
  const placement::PoolId pool = state.FindPool(pool_name);
  if (pool == placement::kNoPool) return head;
  int free_total = 0;
  head.free_at_start.assign(static_cast<size_t>(state.NodeSlots()), -1);
  for (placement::NodeIndex n : state.pool(pool).nodes) {
    const int f = std::popcount(state.node(n).free);
    head.free_at_start[static_cast<size_t>(n)] = f;
    head.capacity_at_start += MembersOn(f, g.gpus_per_member);
    free_total += f;
  }
  auto free_on = [&](placement::NodeIndex node, int gpus) {
    const auto i = static_cast<size_t>(node);
    if (i >= head.free_at_start.size() || head.free_at_start[i] < 0) return;  // another pool
    int& f = head.free_at_start[i];
    const int before = MembersOn(f, g.gpus_per_member);
    f += gpus;
    free_total += gpus;
    head.capacity_at_start += MembersOn(f, g.gpus_per_member) - before;
  };
  auto release = [&](const RunningGang& r) {
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
  auto taken_back = [&](const RunningGang& r) { return r.reclaimable && r.req.priority < g.priority; };
  if (s_->reclaimable > 0) {
    for (const auto& [key, r] : s_->running)
      if (r.pool == pool_name && taken_back(r)) release(r);
  }
  double start = ctx.now;
  if (head.capacity_at_start < g.members) {
    // The pool's running gangs by expected end (the forecast keeps them in that order;
    // overdue ones: soon, not in the past), each instant's together, until the head fits.
    const double soon = ctx.now + s_->forecast.overdue_grace_s;
    std::optional<double> instant;  // of the releases so far
    s_->forecast.InEndOrder(pool_name, [&](double end, const GangKey& key) {
      const double t = std::max(end, soon);
      if (instant && t != *instant) {
        start = *instant;
        if (head.capacity_at_start >= g.members) return false;
      }
      auto r = s_->running.find(key);
      if (r == s_->running.end() || taken_back(r->second)) return true;  // released above
      release(r->second);
      instant = t;
      return true;
    });
    if (instant) start = *instant;  // the last instant released
    if (head.capacity_at_start < g.members) return head;  // unreachable
  }
  head.reservation.expected_start = start;
  head.reservation.reachable = true;
  head.reservation.spare_gpus = std::max(0, free_total - g.Gpus());
  return head;
}


std::optional<HeadPlan> Backfill::HeadFor(const WaitingGang& w, PassContext& ctx) const {
  const GangRequest& g = w.req;
  const TierPolicy& tier = s_->policy.TierOf(g.priority);
  if (g.IsShare() || tier.reserve_after_s < 0 || ctx.now - w.since < tier.reserve_after_s) return std::nullopt;
  // A head whose start cannot be predicted promises nothing and holds nothing back; the
  // shape is remembered for the pass so the replay is not repeated for every such gang.
  auto plan_head = [&](const std::string& pool) -> std::optional<HeadPlan> {
    const auto shape = std::make_tuple(pool, g.gpus_per_member, g.members);
    if (ctx.unreachable.contains(shape)) return std::nullopt;
    HeadPlan candidate = PlanHead(w, pool, ctx);
    if (candidate.reservation.reachable) return candidate;
    ctx.unreachable.insert(shape);
    return std::nullopt;
  };
  if (!g.pool.empty()) {
    if (ctx.heads.contains(g.pool)) return std::nullopt;
    return plan_head(g.pool);
  }
  const placement::ClusterState& state = ctx.driver.state();
  std::optional<HeadPlan> head;
  for (placement::PoolId p = 0; p < state.PoolCount(); ++p) {
    const std::string& name = state.pool(p).name;
    if (state.pool(p).nodes.empty() || ctx.heads.contains(name)) continue;
    std::optional<HeadPlan> candidate = plan_head(name);
    if (candidate && (!head || candidate->reservation.expected_start < head->reservation.expected_start)) {
      head = std::move(candidate);
    }
  }
  return head;
}

// Backfill rules against the head of the pool the admission runs in: (a) it ends before
// the head's expected start; (b) the head still fits at that time with the admission's
// GPUs taken (member capacity per node, not a GPU count: a gang of whole nodes cannot use
// scattered GPUs); (c) preemptible backfill.
std::optional<AdmitKind> Backfill::KindOf(const GangRequest& g, const Admission& a,
                                          PassContext& ctx) const {
  auto h = ctx.heads.find(a.pool);
  if (h == ctx.heads.end() || h->second.reservation.head == g.key) return AdmitKind::kFits;
  if (!s_->policy.backfill) return std::nullopt;
  HeadPlan& head = h->second;
  if (head.reservation.reachable && ctx.now + s_->ExpectedDuration(g) <= head.reservation.expected_start) {
    return AdmitKind::kBackfillEndsInTime;
  }
  if (head.reservation.reachable && head.TakeIfStillFits(a, ctx.driver.state())) return AdmitKind::kBackfillSpareGpus;
  // Spot-like work that checkpoints: the head takes it back when it is ready (only a
  // strictly higher-priority head may).
  if (s_->policy.TierOf(g.priority).preemptible_backfill && g.checkpoints && g.priority < head.reservation.priority &&
      !head.awaiting) {
    return AdmitKind::kPreemptibleBackfill;
  }
  return std::nullopt;
}

void Backfill::Remember(PassContext& ctx) {
  heads_.clear();
  for (auto& [pool, head] : ctx.heads) heads_.emplace(pool, std::move(head.reservation));
}

std::vector<HeadReservation> Backfill::Heads() const {
  std::vector<HeadReservation> out;
  for (const auto& [pool, h] : heads_) out.push_back(h);
  return out;
}

// A gang that outlived its expected end (its hint or tier default was short) would count
// as ending "now + grace" in every pass: a head waiting on its GPUs would expect to start
// within a minute and refuse every backfill for as long as the gang really runs. It is
// re-forecast instead, once per overrun: it is expected to run as long again as it was
// expected to run in all (the estimate proved at least 2x short), never less than the
// grace; a victim that was asked to stop is expected within the grace.
void Backfill::ReforecastOverdue(double now) {
  std::vector<GangKey> overdue;
  s_->forecast.InEndOrder("", [&](double end, const GangKey& key) {
    if (end >= now) return false;
    overdue.push_back(key);
    return true;
  });
  for (const GangKey& key : overdue) {
    auto it = s_->running.find(key);
    if (it == s_->running.end()) continue;
    RunningGang& r = it->second;
    const double grace = s_->forecast.overdue_grace_s;
    const double again = r.evicting ? grace : std::max(grace, r.expected_end - r.started);
    r.expected_end = now + again;
    s_->forecast.Add(key, r.pool, r.expected_end, r.req.IsShare() ? 1 : r.req.Gpus());
    if (!r.evicting) ++s_->stats.overruns;
  }
}

}  // namespace phalanx::scheduling
