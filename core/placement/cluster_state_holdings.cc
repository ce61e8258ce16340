// ClusterState: pod allocations, fractional shares, gang reservations and the
// invariant check used by tests.
#include <algorithm>
#include <bit>
#include <climits>

#include <fmt/format.h>

#include "core/placement/cluster_state.h"

namespace phalanx::placement {

Status ClusterState::CheckFree(const NodeState& n, GpuMask gpus, const std::string& what) const {
  if (gpus == 0) return InvalidArgumentError(fmt::format("{}: no GPUs given", what));
  if (gpus & ~AllGpus(n.spec.gpu_count)) {
    return InvalidArgumentError(
        fmt::format("{}: GPUs beyond node {}'s {} GPUs", what, n.spec.name.str(), n.spec.gpu_count));
  }
  const GpuMask busy = gpus & (n.allocated | n.shared | n.reserved);
  if (busy) {
    return FailedPreconditionError(fmt::format("{}: GPUs {} on node {} are already held", what,
                                               fmt::join(GpuList(busy), ","), n.spec.name.str()));
  }
  return OkStatus();
}

Status ClusterState::Allocate(const PodUid& pod, const NodeName& node, GpuMask gpus, int priority) {
  stamp_.Renew();
  const std::string what = fmt::format("allocate to pod {}", pod.str());
  if (pods_.contains(pod)) return AlreadyExistsError(fmt::format("{}: the pod already holds GPUs", what));
  auto it = by_name_.find(node);
  if (it == by_name_.end()) return NotFoundError(fmt::format("{}: node {} not found", what, node.str()));
  NodeState& n = nodes_[static_cast<size_t>(it->second)];
  PHX_RETURN_IF_ERROR(CheckFree(n, gpus, what));
  auto [pit, inserted] = pods_.emplace(pod, PodAllocation{pod, it->second, gpus, kMilliPerGpu, priority});
  n.allocated |= gpus;
  n.pods.push_back(&pit->second);
  Retier(n);
  Recount(it->second);
  return OkStatus();
}

Status ClusterState::AllocateShare(const PodUid& pod, const NodeName& node, int gpu, int milli,
                                   int priority) {
  stamp_.Renew();
  const std::string what = fmt::format("allocate a share to pod {}", pod.str());
  if (milli < 1 || milli >= kMilliPerGpu) {
    return InvalidArgumentError(fmt::format("{}: {} milli-GPUs; a share is 1..{}", what, milli, kMilliPerGpu - 1));
  }
  if (pods_.contains(pod)) return AlreadyExistsError(fmt::format("{}: the pod already holds GPUs", what));
  auto it = by_name_.find(node);
  if (it == by_name_.end()) return NotFoundError(fmt::format("{}: node {} not found", what, node.str()));
  NodeState& n = nodes_[static_cast<size_t>(it->second)];
  if (gpu < 0 || gpu >= n.spec.gpu_count) {
    return InvalidArgumentError(fmt::format("{}: GPU {} not on node {}", what, gpu, node.str()));
  }
  const GpuMask bit = GpuMask{1} << gpu;
  if ((n.allocated | n.reserved) & bit) {
    return FailedPreconditionError(fmt::format("{}: GPU {} on node {} is held whole", what, gpu, node.str()));
  }
  const int left = kMilliPerGpu - n.share_milli[static_cast<size_t>(gpu)];
  if (left < milli) {
    return FailedPreconditionError(
        fmt::format("{}: GPU {} on node {} has {} milli-GPUs left, {} wanted", what, gpu, node.str(), left, milli));
  }
  auto [pit, inserted] = pods_.emplace(pod, PodAllocation{pod, it->second, bit, milli, priority});
  n.share_milli[static_cast<size_t>(gpu)] = static_cast<int16_t>(n.share_milli[static_cast<size_t>(gpu)] + milli);
  n.shared |= bit;
  n.pods.push_back(&pit->second);
  Retier(n);
  Recount(it->second);
  return OkStatus();
}

void ClusterState::Retier(NodeState& n) {
  // O(holders on the node) per change: mutations are rare next to the filter reads that
  // this summary saves from walking the same pods.
  std::array<int, kMaxGpusPerNode> top;
  top.fill(INT_MIN);
  GpuMask held = 0;
  n.lowest_priority = INT_MAX;
  for (const PodAllocation* p : n.pods) {
    n.lowest_priority = std::min(n.lowest_priority, p->priority);
    held |= p->gpus;
    for (GpuMask m = p->gpus; m; m &= m - 1) {
      int& t = top[static_cast<size_t>(std::countr_zero(m))];
      t = std::max(t, p->priority);
    }
  }
  n.tiers.clear();
  for (GpuMask m = held; m; m &= m - 1) {
    const int g = std::countr_zero(m);
    const int prio = top[static_cast<size_t>(g)];
    auto it = std::lower_bound(n.tiers.begin(), n.tiers.end(), prio,
                               [](const HolderTier& t, int p) { return t.priority < p; });
    if (it == n.tiers.end() || it->priority != prio) it = n.tiers.insert(it, HolderTier{prio, 0});
    it->gpus |= GpuMask{1} << g;
  }
}

void ClusterState::DropPodFromNode(const PodAllocation& alloc) {
  NodeState& n = nodes_[static_cast<size_t>(alloc.node)];
  if (alloc.milli < kMilliPerGpu) {
    const int gpu = std::countr_zero(alloc.gpus);
    auto& used = n.share_milli[static_cast<size_t>(gpu)];
    used = static_cast<int16_t>(used - alloc.milli);
    if (used == 0) n.shared &= ~alloc.gpus;
  } else {
    n.allocated &= ~alloc.gpus;
  }
  auto pos = std::find(n.pods.begin(), n.pods.end(), &alloc);
  if (pos != n.pods.end()) {
    *pos = n.pods.back();
    n.pods.pop_back();
  }
  Retier(n);
}

Status ClusterState::Release(const PodUid& pod) {
  stamp_.Renew();
  auto it = pods_.find(pod);
  if (it == pods_.end()) return NotFoundError(fmt::format("release: pod {} holds no GPUs", pod.str()));
  const NodeIndex node = it->second.node;
  DropPodFromNode(it->second);
  pods_.erase(it);
  Recount(node);
  return OkStatus();
}

const PodAllocation* ClusterState::FindPod(const PodUid& pod) const {
  auto it = pods_.find(pod);
  return it == pods_.end() ? nullptr : &it->second;
}

Status ClusterState::Reserve(const GangKey& plan, std::span<const MemberPlacement> members) {
  stamp_.Renew();
  const std::string what = fmt::format("reserve plan {}", plan.str());
  if (plans_.contains(plan)) return AlreadyExistsError(fmt::format("{}: already reserved", what));
  // Validate everything before touching anything: all or nothing.
  std::unordered_map<NodeIndex, GpuMask> wanted;
  for (size_t m = 0; m < members.size(); ++m) {
    auto it = by_name_.find(members[m].node);
    if (it == by_name_.end()) {
      return NotFoundError(fmt::format("{}: member {}: node {} not found", what, m, members[m].node.str()));
    }
    const NodeState& n = nodes_[static_cast<size_t>(it->second)];
    PHX_RETURN_IF_ERROR(CheckFree(n, members[m].gpus, fmt::format("{}: member {}", what, m)));
    GpuMask& w = wanted[it->second];
    if (w & members[m].gpus) {
      return FailedPreconditionError(fmt::format("{}: member {} overlaps another member on node {}", what, m,
                                                 members[m].node.str()));
    }
    if (members[m].gpus & ~n.spec.healthy) {
      return FailedPreconditionError(
          fmt::format("{}: member {} uses unhealthy GPUs on node {}", what, m, members[m].node.str()));
    }
    w |= members[m].gpus;
  }
  Reservation r{plan, std::vector<MemberPlacement>(members.begin(), members.end()),
                std::vector<bool>(members.size(), false)};
  plans_.emplace(plan, std::move(r));
  for (const auto& [node, mask] : wanted) {
    nodes_[static_cast<size_t>(node)].reserved |= mask;
    Recount(node);
  }
  return OkStatus();
}

Status ClusterState::Unreserve(const GangKey& plan) {
  stamp_.Renew();
  auto it = plans_.find(plan);
  if (it == plans_.end()) return NotFoundError(fmt::format("unreserve: plan {} has no reservation", plan.str()));
  const Reservation& r = it->second;
  for (size_t m = 0; m < r.members.size(); ++m) {
    if (r.committed[m]) continue;
    auto nit = by_name_.find(r.members[m].node);
    if (nit == by_name_.end()) continue;
    nodes_[static_cast<size_t>(nit->second)].reserved &= ~r.members[m].gpus;
    Recount(nit->second);
  }
  plans_.erase(it);
  return OkStatus();
}

Status ClusterState::Commit(const GangKey& plan, int member, const PodUid& pod, int priority) {
  stamp_.Renew();
  auto it = plans_.find(plan);
  if (it == plans_.end()) return NotFoundError(fmt::format("commit: plan {} has no reservation", plan.str()));
  Reservation& r = it->second;
  if (member < 0 || member >= static_cast<int>(r.members.size())) {
    return OutOfRangeError(
        fmt::format("commit: plan {} has {} members, no member {}", plan.str(), r.members.size(), member));
  }
  const auto m = static_cast<size_t>(member);
  if (r.committed[m]) {
    return FailedPreconditionError(fmt::format("commit: member {} of plan {} is already committed", member, plan.str()));
  }
  if (pods_.contains(pod)) {
    return AlreadyExistsError(fmt::format("commit: pod {} already holds GPUs", pod.str()));
  }
  auto nit = by_name_.find(r.members[m].node);
  if (nit == by_name_.end()) {
    return NotFoundError(fmt::format("commit: node {} of plan {} is gone", r.members[m].node.str(), plan.str()));
  }
  NodeState& n = nodes_[static_cast<size_t>(nit->second)];
  const GpuMask gpus = r.members[m].gpus;
  n.reserved &= ~gpus;
  n.allocated |= gpus;
  auto [pit, inserted] = pods_.emplace(pod, PodAllocation{pod, nit->second, gpus, kMilliPerGpu, priority});
  n.pods.push_back(&pit->second);
  Retier(n);
  r.committed[m] = true;
  if (std::all_of(r.committed.begin(), r.committed.end(), [](bool c) { return c; })) plans_.erase(it);
  // Free count is unchanged (reserved -> allocated), but recount keeps one code path.
  Recount(nit->second);
  return OkStatus();
}

const Reservation* ClusterState::FindReservation(const GangKey& plan) const {
  auto it = plans_.find(plan);
  return it == plans_.end() ? nullptr : &it->second;
}

const GangKey* ClusterState::ReservedBy(NodeIndex node, int gpu) const {
  const NodeState& n = nodes_[static_cast<size_t>(node)];
  const GpuMask bit = GpuMask{1} << gpu;
  if (!(n.reserved & bit)) return nullptr;
  for (const auto& [key, r] : plans_) {
    for (size_t m = 0; m < r.members.size(); ++m) {
      if (!r.committed[m] && (r.members[m].gpus & bit) && r.members[m].node == n.spec.name) return &key;
    }
  }
  return nullptr;
}

Status ClusterState::CheckInvariantsForTest() const {
  int free_total = 0, total = 0;
  std::unordered_map<PoolId, std::pair<int, int>> pool_counts;
  for (NodeIndex i : live_) {
    const NodeState& n = nodes_[static_cast<size_t>(i)];
    const std::string name = n.spec.name.str();
    if ((n.allocated & n.shared) || (n.allocated & n.reserved) || (n.shared & n.reserved)) {
      return InternalError(fmt::format("node {}: holdings overlap", name));
    }
    GpuMask alloc = 0, shared = 0;
    std::array<int, kMaxGpusPerNode> milli{};
    for (const PodAllocation* p : n.pods) {
      if (p->node != i) return InternalError(fmt::format("node {}: pod {} points elsewhere", name, p->pod.str()));
      if (p->milli == kMilliPerGpu) alloc |= p->gpus;
      else {
        shared |= p->gpus;
        milli[static_cast<size_t>(std::countr_zero(p->gpus))] += p->milli;
      }
    }
    if (alloc != n.allocated || shared != n.shared) return InternalError(fmt::format("node {}: pod masks differ", name));
    NodeState retiered;
    retiered.pods = n.pods;
    Retier(retiered);
    const bool same_tiers = std::equal(n.tiers.begin(), n.tiers.end(), retiered.tiers.begin(), retiered.tiers.end(),
                                       [](const HolderTier& a, const HolderTier& b) {
                                         return a.priority == b.priority && a.gpus == b.gpus;
                                       });
    if (!same_tiers || n.lowest_priority != retiered.lowest_priority) {
      return InternalError(fmt::format("node {}: holder tiers stale", name));
    }
    for (int g = 0; g < kMaxGpusPerNode; ++g) {
      if (milli[static_cast<size_t>(g)] != n.share_milli[static_cast<size_t>(g)]) {
        return InternalError(fmt::format("node {}: share milli of GPU {} differ", name, g));
      }
    }
    const GpuMask want_free = n.spec.schedulable ? WholeGpus(n.spec) & ~(n.allocated | n.shared | n.reserved) : 0;
    if (want_free != n.free) return InternalError(fmt::format("node {}: free mask stale", name));
    const int f = std::popcount(n.free), t = n.spec.schedulable ? std::popcount(WholeGpus(n.spec)) : 0;
    const auto& slot = slots_[static_cast<size_t>(i)];
    if (slot.indexed_free != f || slot.indexed_total != t) return InternalError(fmt::format("node {}: counts stale", name));
    const auto& bucket = pools_[static_cast<size_t>(n.pool)].buckets[static_cast<size_t>(f)];
    if (slot.bucket_pos < 0 || static_cast<size_t>(slot.bucket_pos) >= bucket.size() ||
        bucket[static_cast<size_t>(slot.bucket_pos)] != i) {
      return InternalError(fmt::format("node {}: not in its free bucket", name));
    }
    free_total += f;
    total += t;
    pool_counts[n.pool].first += f;
    pool_counts[n.pool].second += t;
  }
  if (free_total != free_gpus_ || total != total_gpus_) return InternalError("cluster totals stale");
  for (PoolId p = 0; p < static_cast<PoolId>(pools_.size()); ++p) {
    const auto c = pool_counts[p];
    if (pools_[static_cast<size_t>(p)].free_gpus != c.first || pools_[static_cast<size_t>(p)].total_gpus != c.second) {
      return InternalError(fmt::format("pool {} totals stale", pools_[static_cast<size_t>(p)].name));
    }
  }
  for (size_t l = 0; l < levels_.size(); ++l) {
    for (const DomainInfo& d : domains_[l]) {
      for (const DomainPoolSlice& s : d.by_pool) {
        int nodes = 0, f = 0, t = 0;
        std::array<int32_t, kMaxGpusPerNode + 1> hist{};
        for (NodeIndex i : d.nodes) {
          const NodeState& n = nodes_[static_cast<size_t>(i)];
          if (n.pool != s.pool) continue;
          ++nodes;
          f += slots_[static_cast<size_t>(i)].indexed_free;
          t += slots_[static_cast<size_t>(i)].indexed_total;
          ++hist[static_cast<size_t>(slots_[static_cast<size_t>(i)].indexed_free)];
        }
        if (nodes != s.nodes || f != s.free_gpus || t != s.total_gpus || hist != s.free_hist) {
          return InternalError(fmt::format("domain {}={} slice stale", levels_[l], d.value));
        }
      }
    }
  }
  return OkStatus();
}

}  // namespace phalanx::placement
