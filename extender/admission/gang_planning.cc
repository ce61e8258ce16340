// Gangs as the planner and the engine see them (admission_pass.h): a gang's planning spec and
// engine request, the cluster minus GPUs kube-scheduler nominated to higher-priority pods, and
// filter-time planning of ungated gangs (TryPlan), held to their team queue's quota.
#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "core/placement/gang_plan.h"
#include "extender/admission/admission_pass.h"
#include "extender/extender_internal.h"

namespace phalanx::extender {

using namespace internal;  // NOLINT: this component's own helpers

std::optional<int> AdmissionPass::EffectiveMin(const GangRecord& g, MonotonicTime now) const {
  return g.MinMembers(now);
}

placement::GangSpec AdmissionPass::SpecOf(const GangRecord& g, int members) const {
  placement::GangSpec spec;
  spec.key = g.key;
  spec.members = members;
  spec.gpus_per_member = std::clamp(g.gpus_per_member, 1, placement::kMaxGpusPerNode);
  if (!g.pool_selector.empty()) spec.pool = g.pool_selector;
  if (!g.level.empty() && h_.ledger.state().LevelIndex(g.level) >= 0) {
    spec.level = g.level;
    spec.mode = g.required ? placement::TopologyMode::kRequired : placement::TopologyMode::kPreferred;
  }
  return spec;
}

std::string AdmissionPass::TryPlan(GangRecord& g, MonotonicTime now, bool* over_quota) {
  std::string why = TryPlanOnce(g, now, over_quota);
  if (!why.empty()) g.filter_refusals++;
  return why;
}

std::string AdmissionPass::TryPlanOnce(GangRecord& g, MonotonicTime now, bool* over_quota) {
  auto min = EffectiveMin(g, now);
  const int live = static_cast<int>(g.members.size());
  if (!min) {
    return g.last_no_fit = fmt::format(
               "gang {}: {} member(s) seen; without phalanx.io/gang-min-members the count is taken once no new "
               "member appears for {} ms",
               g.key.str(), live, h_.config.member_settle.count());
  }
  if (live < *min) {
    return g.last_no_fit = fmt::format("gang {}: {} of {} members exist; waiting for the rest", g.key.str(),
                                       live, *min);
  }
  if (!g.level.empty() && h_.ledger.state().LevelIndex(g.level) < 0) {
    return g.last_no_fit = fmt::format("gang {}: topology level \"{}\" is not configured (topologyLevels)",
                                       g.key.str(), g.level);
  }
  // kube-scheduler counts a nominated preemptor's resources as taken on its node; a plan that
  // took them would stall the preemptor behind a lower tier (and the gang behind the
  // scheduler's own fit), so plan as if they were held.
  const std::optional<placement::ClusterState> held = StateWithNominatedHolds(h_.ledger.state(), g.priority);
  auto planned = placement::PlanGang(held ? *held : h_.ledger.state(), SpecOf(g, std::max(*min, live)));
  if (!planned.ok()) return g.last_no_fit = fmt::format("gang {}: {}", g.key.str(), planned.status().message());
  if (!planned->fits()) return g.last_no_fit = fmt::format("gang {}: {}", g.key.str(), planned->no_fit->Message());
  // The team queue's quota, as the engine applies it to gated gangs: an ungated gang (no
  // webhook, or created while it was away) must not run its queue past its quota either.
  const int members = static_cast<int>(planned->plan->members.size());
  const std::string pool = planned->plan->pool;
  if (std::string why = quotas_.QuotaRefusal(g, pool, members); !why.empty()) {
    if (over_quota != nullptr) *over_quota = true;
    return g.last_no_fit = fmt::format("gang {}: {}", g.key.str(), why);
  }
  const GangKey key = g.key;
  Status st = h_.ledger.AdmitPlan(key, std::move(*planned->plan), now);
  if (!st.ok()) return fmt::format("gang {}: {}", key.str(), st.message());
  quotas_.RecordUncounted(g, pool, members);
  h_.stats.gangs_admitted++;
  g.last_no_fit.clear();
  return "";
}

std::optional<placement::ClusterState> AdmissionPass::StateWithNominatedHolds(const placement::ClusterState& base,
                                                                        int priority) const {
  std::optional<placement::ClusterState> state;
  for (const PodUid& uid : h_.ledger.nominated_pods()) {
    const PodRecord* rec = h_.ledger.FindPod(uid);
    if (rec == nullptr || rec->info.gpus <= 0 || rec->info.priority <= priority || rec->holding != Holding::kNone) {
      continue;
    }
    const PodInfo& p = rec->info;
    if (!state) state.emplace(base);
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

std::string AdmissionPass::PoolOf(const GangRecord& g) const {
  if (g.plan) return g.plan->pool;
  // Where its members hold GPUs (a gang never spans pools); its selector otherwise.
  const placement::ClusterState& state = h_.ledger.state();
  for (const PodUid& uid : g.members) {
    const PodRecord* rec = h_.ledger.FindPod(uid);
    if (rec == nullptr || rec->holding == Holding::kNone) continue;
    if (auto node = state.FindNode(rec->node)) return state.pool(state.node(*node).pool).name;
  }
  return g.pool_selector;
}

scheduling::GangRequest AdmissionPass::EngineRequestOf(const GangRecord& g, int members) const {
  scheduling::GangRequest r;
  r.key = g.key;
  r.job = g.key.str();
  r.pool = g.pool_selector;
  r.priority = g.priority;
  r.members = members;
  r.gpus_per_member = std::clamp(g.gpus_per_member, 1, placement::kMaxGpusPerNode);
  if (!g.level.empty() && h_.ledger.state().LevelIndex(g.level) >= 0) {
    r.level = g.level;
    r.mode = g.required ? placement::TopologyMode::kRequired : placement::TopologyMode::kPreferred;
  }
  r.submitted = EngineSeconds(g.first_seen);
  r.queue = quotas_.QueueOf(g);
  if (!g.members.empty()) {
    const PodRecord* rec = h_.ledger.FindPod(*g.members.begin());
    if (rec && !rec->info.training_job.empty()) {
      r.job = rec->info.ns + "/" + rec->info.training_job;
      const TrainingJobInfo* tj = h_.ledger.FindTrainingJob(r.job);
      r.checkpoints = tj && tj->notice_seconds_needed > 0;
      // Its deadline is an upper bound of its run: a safe expected end for backfill.
      if (tj && tj->active_deadline_seconds > 0) r.duration_hint_s = tj->active_deadline_seconds;
      // A whole-gang restart (new pods, new first_seen) keeps the job's place: it was
      // submitted when its TrainingJob was created, as the simulator replays a victim's next
      // attempt (tests/unit/sim/engine_equivalence_preemption_test.cc).
      if (tj && tj->created) {
        const auto age = std::chrono::duration_cast<Duration>(h_.clock.WallNow() - *tj->created);
        r.submitted = std::min(r.submitted, EngineSeconds(h_.clock.Now() - age));
      }
    }
  }
  return r;
}

}  // namespace phalanx::extender
