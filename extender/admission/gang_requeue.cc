// The filter-time fallback for ungated gangs (no webhook, or created while it was away), and
// why it needs a nudge: kube-scheduler v1.26 (pkg/scheduler/internal/queue/scheduling_queue.go)
// puts a pod whose every node failed the filter into unschedulablePods. An extender's
// FailedNodes name no plugin, so the pod leaves it on any cluster event that moves every
// unschedulable pod (Node added; Node updated in spec.unschedulable, allocatable, labels, taints
// or condition statuses; an assigned pod deleted; storage objects), on an update of its own
// object that isPodUpdated sees (metadata or spec), or after podMaxInUnschedulablePodsDuration
// (5 min, checked every 30 s). A member refused while its gang was incomplete (fewer members
// than min, or the member count still settling) waits there although nothing it waits for is
// such an event: its siblings appearing (unscheduled pod add), a sibling bound (AssignedPodAdd
// moves only pods with a matching affinity term) and the device plugin's Node annotations are
// none. On a quiet cluster it waits for an unrelated event or the 5-minute flush (measured: 22 s,
// 65 s, > 40 s with kube-scheduler v1.26; in the e2e SchedulerDriver's model, until the flush).
//
// So the active extender, on its tick: plans an ungated gang that was refused at filter once it
// is complete (the same TryPlan filter uses), and then touches every unbound member without a
// plan slot with the phalanx.io/requeued-at annotation, once per plan. That pod update moves it
// to kube-scheduler's backoff queue (1-10 s) or active queue, and its filter finds its slot.
#include <fmt/format.h>

#include "extender/admission/admission_pass.h"
#include "extender/extender_internal.h"

namespace phalanx::extender {
namespace {

bool Ungated(const Ledger& ledger, const GangRecord& g) {
  for (const PodUid& uid : g.members) {
    const PodRecord* rec = ledger.FindPod(uid);
    if (rec && rec->info.gated) return false;
  }
  return true;
}

// A member that kube-scheduler still has to place and that holds no slot of the plan.
bool Waiting(const GangRecord& g, const PodRecord* rec) {
  return rec && rec->info.node_name.empty() && rec->holding == Holding::kNone && !g.assignment.contains(rec->info.uid);
}

}  // namespace

bool AdmissionPass::RequeueDue(const GangRecord& g, MonotonicTime now) const {
  // Cheap tests first: this runs for every gang on every tick.
  if (!g.plan) {
    if (g.filter_refusals == 0) return false;  // never refused at filter
    const auto min = EffectiveMin(g, now);
    const int live = static_cast<int>(g.members.size());
    if (!min || live < *min) return false;
    auto tried = requeue_tried_.find(g.key);
    if (tried != requeue_tried_.end() && tried->second == std::pair{live, *min}) return false;
    return Ungated(h_.ledger, g);
  }
  // Planned by the engine (gated at arrival: lifting the gate is the pod update) or by a filter
  // that refused no member: nothing waits in kube-scheduler's unschedulable queue.
  if (g.filter_refusals == 0 || g.assignment.size() >= g.members.size() || !Ungated(h_.ledger, g)) return false;
  for (const PodUid& uid : g.members) {
    auto done = requeued_.find(uid);
    if (Waiting(g, h_.ledger.FindPod(uid)) && (done == requeued_.end() || done->second != g.planned_at)) return true;
  }
  return false;
}

void AdmissionPass::RequeueUngatedGangs(MonotonicTime now) {
  {
    std::shared_lock shared(h_.mu);
    bool due = false;
    for (const auto& [key, g] : h_.ledger.gangs()) due = due || RequeueDue(g, now);
    if (!due) return;
  }
  std::vector<PodRef> touch;
  std::unique_lock lock(h_.mu);
  std::vector<GangKey> keys;
  for (const auto& [key, g] : h_.ledger.gangs()) {
    if (RequeueDue(g, now)) keys.push_back(key);
  }
  for (const GangKey& key : keys) {
    GangRecord* g = h_.ledger.MutableGang(key);
    if (g == nullptr || !RequeueDue(*g, now)) continue;
    if (!g->plan) {
      const int min = *EffectiveMin(*g, now);
      requeue_tried_[key] = {static_cast<int>(g->members.size()), min};
      if (!TryPlanOnce(*g, now, nullptr).empty()) continue;  // no fit: a cluster event wakes the members
    }
    for (const PodUid& uid : g->members) {
      const PodRecord* rec = h_.ledger.FindPod(uid);
      if (!Waiting(*g, rec)) continue;
      auto [it, added] = requeued_.try_emplace(uid, g->planned_at);
      if (!added && it->second == g->planned_at) continue;
      it->second = g->planned_at;
      touch.push_back(internal::RefOf(rec->info));
    }
  }
  // Forget what is gone.
  std::erase_if(requeue_tried_, [&](const auto& e) {
    const GangRecord* g = h_.ledger.FindGang(e.first);
    return g == nullptr || g->plan;
  });
  std::erase_if(requeued_, [&](const auto& e) { return h_.ledger.FindPod(e.first) == nullptr; });
  lock.unlock();
  if (touch.empty()) return;
  const std::string stamp = fmt::format("{}", std::chrono::duration_cast<std::chrono::milliseconds>(
                                                  std::chrono::system_clock::now().time_since_epoch())
                                                  .count());
  std::vector<WritePool::Task> writes;
  for (PodRef& ref : touch) {
    writes.push_back([this, ref = std::move(ref), stamp] {
      if (!writes_.writer.RequeuePod(ref, stamp).ok()) h_.stats.write_errors++;
    });
  }
  h_.stats.ungated_requeues += touch.size();
  writes_.io.FanOut(std::move(writes), [] {});
}

}  // namespace phalanx::extender
