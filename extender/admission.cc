// The tick: bind-barrier timeouts, plan expiry, and gang admission (plans reserved, gates
// lifted) in AdmissionQueue order.
#include "extender/extender.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "core/placement/gang_plan.h"
#include "extender/extender_internal.h"

namespace phalanx::extender {

using namespace internal;  // NOLINT: this component's own helpers

std::optional<int> Extender::EffectiveMin(const GangRecord& g, MonotonicTime now) const {
  return g.MinMembers(now);
}

placement::GangSpec Extender::SpecOf(const GangRecord& g, int members) const {
  placement::GangSpec spec;
  spec.key = g.key;
  spec.members = members;
  spec.gpus_per_member = std::clamp(g.gpus_per_member, 1, placement::kMaxGpusPerNode);
  if (!g.pool_selector.empty()) spec.pool = g.pool_selector;
  if (!g.level.empty() && ledger_.state().LevelIndex(g.level) >= 0) {
    spec.level = g.level;
    spec.mode = g.required ? placement::TopologyMode::kRequired : placement::TopologyMode::kPreferred;
  }
  return spec;
}

std::string Extender::TryPlan(GangRecord& g, MonotonicTime now) {
  auto min = EffectiveMin(g, now);
  const int live = static_cast<int>(g.members.size());
  if (!min) {
    return g.last_no_fit = fmt::format(
               "gang {}: {} member(s) seen; without phalanx.io/gang-min-members the count is taken once no new "
               "member appears for {} ms",
               g.key.str(), live, config_.member_settle.count());
  }
  if (live < *min) {
    return g.last_no_fit = fmt::format("gang {}: {} of {} members exist; waiting for the rest", g.key.str(),
                                       live, *min);
  }
  if (!g.level.empty() && ledger_.state().LevelIndex(g.level) < 0) {
    return g.last_no_fit = fmt::format("gang {}: topology level \"{}\" is not configured (topologyLevels)",
                                       g.key.str(), g.level);
  }
  // kube-scheduler counts a nominated preemptor's resources as taken on its node; a plan that
  // took them would stall the preemptor behind a lower tier (and the gang behind the
  // scheduler's own fit), so plan as if they were held.
  const std::optional<placement::ClusterState> held = StateWithNominatedHolds(g.priority);
  auto planned = placement::PlanGang(held ? *held : ledger_.state(), SpecOf(g, std::max(*min, live)));
  if (!planned.ok()) return g.last_no_fit = fmt::format("gang {}: {}", g.key.str(), planned.status().message());
  if (!planned->fits()) return g.last_no_fit = fmt::format("gang {}: {}", g.key.str(), planned->no_fit->Message());
  const GangKey key = g.key;
  Status st = ledger_.AdmitPlan(key, std::move(*planned->plan), now);
  if (!st.ok()) return fmt::format("gang {}: {}", key.str(), st.message());
  stats_.gangs_admitted++;
  return "";
}

std::optional<placement::ClusterState> Extender::StateWithNominatedHolds(int priority) const {
  std::optional<placement::ClusterState> state;
  for (const PodUid& uid : ledger_.nominated_pods()) {
    const PodRecord* rec = ledger_.FindPod(uid);
    if (rec == nullptr || rec->info.gpus <= 0 || rec->info.priority <= priority || rec->holding != Holding::kNone) {
      continue;
    }
    const PodInfo& p = rec->info;
    if (!state) state.emplace(ledger_.state());
    const auto index = state->FindNode(NodeName(p.nominated_node));
    if (!index) continue;
    placement::GpuMask free = state->node(*index).free, take = 0;
    for (int n = 0; n < p.gpus && free != 0; ++n) {
      const placement::GpuMask lowest = free & (~free + 1);
      take |= lowest;
      free &= ~lowest;
    }
    if (take != 0) (void)state->Allocate(PodUid("nominated:" + uid.str()), NodeName(p.nominated_node), take, p.priority);
  }
  return state;
}

// --- tick: barrier timeouts, plan expiry, admission -------------------------------------------

void Extender::Tick() {
  const MonotonicTime now = clock_.Now();
  std::unique_lock lock(mu_);
  std::vector<GangKey> expired;
  for (const auto& [key, b] : barriers_) {
    if (now >= b.deadline) expired.push_back(key);
  }
  for (const GangKey& key : expired) {
    const GangRecord* g = ledger_.FindGang(key);
    const size_t held = barriers_[key].held.size();
    const int min = g ? EffectiveMin(*g, now).value_or(0) : 0;
    stats_.barrier_timeouts++;
    FailBarrier(key, fmt::format("gang {} timed out at the bind barrier with {} of {} members held; every held "
                                 "bind failed and the plan was dropped",
                                 key.str(), held, min));
  }
  // Plans nobody binds against expire (there is no Unreserve verb).
  std::vector<GangKey> stale;
  for (const auto& [key, g] : ledger_.gangs()) {
    if (g.plan && !barriers_.contains(key) && CommittedMembers(key) == 0 && now - g.planned_at > config_.plan_ttl) {
      stale.push_back(key);
    }
  }
  for (const GangKey& key : stale) {
    stats_.plans_expired++;
    ledger_.DropPlan(key);
    if (GangRecord* g = ledger_.MutableGang(key)) {
      g->last_no_fit = fmt::format("the plan expired after {} without a bind", Seconds(config_.plan_ttl));
    }
  }
  if (leadership_.IsLeader()) Admit(now);
}

void Extender::Admit(MonotonicTime now) {
  // Queue gated gangs that are complete, in arrival order (FIFO within a priority);
  // forget queued gangs that vanished, got a plan, or lost members.
  std::set<std::string> pools;
  std::vector<const GangRecord*> ready;
  for (const auto& [key, g] : ledger_.gangs()) {
    int gated = 0;
    for (const PodUid& uid : g.members) {
      const PodRecord* rec = ledger_.FindPod(uid);
      if (rec && rec->info.gated) gated++;
    }
    const auto min = EffectiveMin(g, now);
    if (!g.plan && gated > 0 && min && static_cast<int>(g.members.size()) >= *min) ready.push_back(&g);
  }
  std::sort(ready.begin(), ready.end(), [](const GangRecord* a, const GangRecord* b) {
    return std::tie(a->first_seen, a->key) < std::tie(b->first_seen, b->key);
  });
  std::set<GangKey> still;
  for (const GangRecord* g : ready) {
    still.insert(g->key);
    pools.insert(g->pool_selector);
    if (!queued_.contains(g->key)) {
      (void)queue_.Enqueue({.key = g->key, .pool = g->pool_selector, .priority = g->priority, .gang = true}, now);
      queued_.insert(g->key);
    }
  }
  for (auto it = queued_.begin(); it != queued_.end();) {
    if (still.contains(*it)) {
      ++it;
      continue;
    }
    (void)queue_.Remove(*it);
    it = queued_.erase(it);
  }
  for (const std::string& pool : pools) {
    std::optional<GangKey> after;
    while (auto next = queue_.NextToTry(pool, now, after)) {
      GangRecord* g = ledger_.MutableGang(*next);
      if (!g) {
        (void)queue_.Remove(*next);
        queued_.erase(*next);
        break;
      }
      const bool fitted = TryPlan(*g, now).empty();
      (void)queue_.RecordAttempt(*next, fitted, now);
      if (fitted) {
        queued_.erase(*next);  // admitted gangs leave the queue
        LiftGates(*g);
        break;  // one admission per pool per pass
      }
      after = *next;
    }
  }
}

void Extender::LiftGates(const GangRecord& g) {
  std::vector<PodRef> refs;
  for (const PodUid& uid : g.members) {
    const PodRecord* rec = ledger_.FindPod(uid);
    if (!rec || !rec->info.gated) continue;
    refs.push_back(RefOf(rec->info));
    PodInfo ungated = rec->info;
    ungated.gated = false;  // assumed; the informer confirms
    ledger_.UpsertPod(ungated, clock_.Now());
  }
  // One task per member: the pool lifts a gang's gates in parallel.
  std::vector<WritePool::Task> lifts;
  for (PodRef& ref : refs) {
    lifts.push_back([this, ref = std::move(ref)] {
      if (!writer_.LiftGangGate(ref).ok()) stats_.write_errors++;
    });
  }
  io_.FanOut(std::move(lifts), [] {});
}

}  // namespace phalanx::extender
