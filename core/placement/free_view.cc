#include "core/placement/free_view.h"

#include <bit>

namespace phalanx::placement {

GpuMask FreedBy(const ClusterState& state, const PodAllocation& pod, int released_milli_on_gpu) {
  const NodeState& n = state.node(pod.node);
  if (!n.spec.schedulable) return 0;
  if (pod.milli >= kMilliPerGpu) return pod.gpus & WholeGpus(n.spec);
  const int gpu = std::countr_zero(pod.gpus);
  if (released_milli_on_gpu < n.share_milli[static_cast<size_t>(gpu)]) return 0;
  return pod.gpus & WholeGpus(n.spec) & ~n.reserved;
}

FreeView::FreeView(const ClusterState& state, const std::optional<GangKey>& own_plan,
                   std::span<const PodUid> released)
    : state_(state) {
  if (own_plan) {
    if (const Reservation* r = state.FindReservation(*own_plan)) {
      for (size_t m = 0; m < r->members.size(); ++m) {
        if (r->committed[m]) continue;
        auto node = state.FindNode(r->members[m].node);
        if (!node) continue;
        const NodeState& n = state.node(*node);
        if (n.spec.schedulable) AddExtra(*node, r->members[m].gpus & WholeGpus(n.spec));
      }
    }
  }
  // Shares: a GPU comes free only when all of its shares are released, so sum first.
  std::unordered_map<uint64_t, int> share_milli;  // (node << 8 | gpu) -> released milli
  std::vector<const PodAllocation*> shares;
  for (const PodUid& uid : released) {
    const PodAllocation* p = state.FindPod(uid);
    if (!p) continue;
    if (p->milli >= kMilliPerGpu) {
      AddExtra(p->node, FreedBy(state, *p, 0));
    } else {
      const auto key = (static_cast<uint64_t>(p->node) << 8) | static_cast<uint64_t>(std::countr_zero(p->gpus));
      share_milli[key] += p->milli;
      shares.push_back(p);
    }
  }
  for (const PodAllocation* p : shares) {
    const auto key = (static_cast<uint64_t>(p->node) << 8) | static_cast<uint64_t>(std::countr_zero(p->gpus));
    AddExtra(p->node, FreedBy(state, *p, share_milli[key]));
  }
}

void FreeView::AddExtra(NodeIndex node, GpuMask gpus) {
  if (gpus == 0) return;
  extra_[node] |= gpus;
}

}  // namespace phalanx::placement
