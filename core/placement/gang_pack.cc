#include "core/placement/gang_pack.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>

#include "core/placement/device_set_cache.h"

namespace phalanx::placement {
namespace {

struct Candidate {
  NodeIndex node;
  int cap;   // members it can host
  int free;  // free GPUs
};

}  // namespace

ScopeCapacity PoolCapacity(const FreeView& view, PoolId pool, int g) {
  const PoolInfo& info = view.state().pool(pool);
  ScopeCapacity c;
  c.free = info.free_gpus;
  for (int f = g; f <= kMaxGpusPerNode; ++f) {
    c.members += static_cast<int>(info.buckets[static_cast<size_t>(f)].size()) * (f / g);
  }
  for (const auto& [node, extra] : view.overlay()) {
    const NodeState& n = view.state().node(node);
    if (n.pool != pool) continue;
    const int before = std::popcount(n.free), after = std::popcount(n.free | extra);
    c.members += after / g - before / g;
    c.free += after - before;
  }
  return c;
}

DomainCapacities LevelCapacities(const FreeView& view, int level, PoolId pool, int g) {
  const ClusterState& s = view.state();
  DomainCapacities out;
  const int count = s.DomainCount(level);
  out.by_domain.assign(static_cast<size_t>(count), {});
  out.present.assign(static_cast<size_t>(count), false);
  for (DomainId d = 0; d < count; ++d) {
    const DomainPoolSlice* slice = s.domain(level, d).Slice(pool);
    if (!slice || slice->nodes == 0) continue;
    out.present[static_cast<size_t>(d)] = true;
    ScopeCapacity& c = out.by_domain[static_cast<size_t>(d)];
    c.free = slice->free_gpus;
    for (int f = g; f <= kMaxGpusPerNode; ++f) c.members += slice->free_hist[static_cast<size_t>(f)] * (f / g);
  }
  for (const auto& [node, extra] : view.overlay()) {
    const NodeState& n = s.node(node);
    if (n.pool != pool) continue;
    const DomainId d = n.domains[static_cast<size_t>(level)];
    if (d == kNoDomain) continue;
    const int before = std::popcount(n.free), after = std::popcount(n.free | extra);
    ScopeCapacity& c = out.by_domain[static_cast<size_t>(d)];
    c.members += after / g - before / g;
    c.free += after - before;
  }
  return out;
}

void PackMembers(const FreeView& view, PoolId pool, const std::vector<NodeIndex>* nodes, int members, int g,
                 GangPlan& plan) {
  const ClusterState& s = view.state();
  // Candidates by the members they can host. The order is: most members per node first
  // (fewest nodes), then the fullest node (best fit), then by name so the result does not
  // depend on insertion order. Packing takes a few nodes from the front of that order, so
  // each capacity's nodes are heaped (linear) and popped as needed rather than the whole
  // pool sorted per plan (a sort per plan was 80 % of a pass admitting thousands of gangs).
  std::array<std::vector<Candidate>, kMaxGpusPerNode + 1> by_cap;
  auto consider = [&](NodeIndex i) {
    const int f = std::popcount(view.Free(i));
    if (f >= g) by_cap[static_cast<size_t>(f / g)].push_back({i, f / g, f});
  };
  if (nodes) {
    for (NodeIndex i : *nodes)
      if (s.node(i).pool == pool) consider(i);
  } else {
    // Without an overlay only buckets >= g can host a member; with one, a node from
    // any bucket (even 0) may have gained GPUs, and consider() uses the view's count.
    const PoolInfo& info = s.pool(pool);
    const int lowest = view.overlay().empty() ? g : 0;
    for (int f = kMaxGpusPerNode; f >= lowest; --f)
      for (NodeIndex i : info.buckets[static_cast<size_t>(f)]) consider(i);
  }
  auto later = [&](const Candidate& a, const Candidate& b) {  // a after b (a max-heap of "first")
    if (a.free != b.free) return a.free > b.free;
    return s.node(a.node).spec.name > s.node(b.node).spec.name;
  };
  std::array<bool, kMaxGpusPerNode + 1> heaped{};
  auto take_first = [&](int cap) {
    std::vector<Candidate>& v = by_cap[static_cast<size_t>(cap)];
    if (!heaped[static_cast<size_t>(cap)]) std::make_heap(v.begin(), v.end(), later);
    heaped[static_cast<size_t>(cap)] = true;
    std::pop_heap(v.begin(), v.end(), later);
    const Candidate c = v.back();
    v.pop_back();
    return c;
  };

  std::vector<std::pair<Candidate, int>> picks;  // (node, members there)
  int remaining = members;
  while (remaining > 0) {
    // One node takes the rest: the smallest capacity that does, and within it the fullest.
    int fits_all = 0;
    for (int cap = remaining; cap <= kMaxGpusPerNode && fits_all == 0; ++cap) {
      if (!by_cap[static_cast<size_t>(cap)].empty()) fits_all = cap;
    }
    if (fits_all > 0) {
      picks.emplace_back(take_first(fits_all), remaining);
      break;
    }
    // Else the first node of the largest capacity takes what it can.
    int largest = kMaxGpusPerNode;
    while (largest > 0 && by_cap[static_cast<size_t>(largest)].empty()) --largest;
    if (largest == 0) break;
    picks.emplace_back(take_first(largest), largest);
    remaining -= largest;
  }

  double min_ring = std::numeric_limits<double>::infinity();
  double ratio_sum = 0;
  plan.members.clear();
  plan.members.reserve(static_cast<size_t>(members));
  for (const auto& [pick, k] : picks) {
    const NodeState& n = s.node(pick.node);
    GpuMask avail = view.Free(pick.node);
    for (int m = 0; m < k; ++m) {
      std::optional<CachedDeviceSet> choice = ChooseDeviceSetCached(n.spec.bandwidth, avail, g);
      if (!choice) break;  // unreachable: capacity was counted from the same masks
      avail &= ~choice->gpus;
      plan.members.push_back(MemberPlacement{n.spec.name, choice->gpus, choice->ring_bandwidth_gbps});
      min_ring = std::min(min_ring, choice->ring_bandwidth_gbps);
      ratio_sum += TopologyRatio(n.spec.bandwidth, WholeGpus(n.spec), g, choice->ring_bandwidth_gbps);
    }
  }
  plan.quality.nodes_used = static_cast<int>(picks.size());
  plan.quality.min_ring_bandwidth_gbps = plan.members.empty() ? 0 : min_ring;
  plan.quality.mean_topology_ratio =
      plan.members.empty() ? 1.0 : ratio_sum / static_cast<double>(plan.members.size());
}

}  // namespace phalanx::placement
