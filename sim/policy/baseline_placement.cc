#include "sim/policy/baseline_placement.h"

#include <bit>
#include <unordered_map>

namespace phalanx::sim {
namespace {

using placement::ClusterState;
using placement::GpuMask;
using placement::NodeIndex;
using placement::PoolId;

GpuMask LowestBits(GpuMask mask, int n) {
  GpuMask out = 0;
  for (int i = 0; i < n && mask; ++i) {
    GpuMask bit = mask & (~mask + 1);
    out |= bit;
    mask &= ~bit;
  }
  return out;
}

std::optional<std::vector<placement::MemberPlacement>> PlaceInPool(const ClusterState& s, PoolId pool, int members,
                                                                   int gpus, NodeOrder order) {
  const placement::PoolInfo& info = s.pool(pool);
  if (info.free_gpus < members * gpus) return std::nullopt;
  std::unordered_map<NodeIndex, GpuMask> taken;  // GPUs given to earlier members of this job
  auto free_of = [&](NodeIndex n) {
    auto it = taken.find(n);
    return it == taken.end() ? s.node(n).free : s.node(n).free & ~it->second;
  };
  std::vector<placement::MemberPlacement> out;
  for (int m = 0; m < members; ++m) {
    NodeIndex pick = placement::kNoNode;
    int pick_free = 0;
    if (order == NodeOrder::kFirstFit) {
      for (NodeIndex n : info.nodes)
        if (std::popcount(free_of(n)) >= gpus) {
          pick = n;
          break;
        }
    } else {
      // Untouched nodes come from the free-count buckets; nodes this job already used
      // have a smaller effective free count and are compared separately.
      const bool best = order == NodeOrder::kBestFit;
      for (int k = 0; k <= placement::kMaxGpusPerNode - gpus && pick == placement::kNoNode; ++k) {
        const int f = best ? gpus + k : placement::kMaxGpusPerNode - k;
        for (NodeIndex n : info.buckets[static_cast<size_t>(f)])
          if (!taken.contains(n)) {
            pick = n;
            pick_free = f;
            break;
          }
      }
      for (const auto& [n, mask] : taken) {
        const int f = std::popcount(free_of(n));
        if (f < gpus) continue;
        const bool better = pick == placement::kNoNode || (best ? f < pick_free : f > pick_free) ||
                            (f == pick_free && n < pick);
        if (better) {
          pick = n;
          pick_free = f;
        }
      }
    }
    if (pick == placement::kNoNode) return std::nullopt;
    const GpuMask g = LowestBits(free_of(pick), gpus);
    taken[pick] |= g;
    out.push_back(placement::MemberPlacement{s.node(pick).spec.name, g, 0});
  }
  return out;
}

}  // namespace

std::optional<std::vector<placement::MemberPlacement>> PlaceMembers(const ClusterState& s,
                                                                    const std::optional<std::string>& pool,
                                                                    int members, int gpus, NodeOrder order) {
  if (pool) {
    const PoolId p = s.FindPool(*pool);
    if (p == placement::kNoPool) return std::nullopt;
    return PlaceInPool(s, p, members, gpus, order);
  }
  for (PoolId p = 0; p < s.PoolCount(); ++p)
    if (auto placed = PlaceInPool(s, p, members, gpus, order)) return placed;
  return std::nullopt;
}

std::optional<SharePlacement> PlaceShare(const ClusterState& s, const std::optional<std::string>& pool, int milli,
                                         NodeOrder order) {
  std::optional<SharePlacement> best;
  int best_room = 0;
  for (PoolId p = 0; p < s.PoolCount(); ++p) {
    const placement::PoolInfo& info = s.pool(p);
    if (pool && info.name != *pool) continue;
    for (NodeIndex n : info.nodes) {
      const int count = s.node(n).spec.gpu_count;
      for (int g = 0; g < count; ++g) {
        const int room = s.FreeMilli(n, g);
        if (room < milli) continue;
        if (order == NodeOrder::kFirstFit) return SharePlacement{s.node(n).spec.name, g};
        const bool better = !best || (order == NodeOrder::kBestFit ? room < best_room : room > best_room);
        if (better) {
          best = SharePlacement{s.node(n).spec.name, g};
          best_room = room;
        }
      }
    }
  }
  return best;
}

int PoolFreeGpus(const ClusterState& s, const std::optional<std::string>& pool) {
  if (!pool) return s.FreeGpus();
  const PoolId p = s.FindPool(*pool);
  return p == placement::kNoPool ? 0 : s.pool(p).free_gpus;
}

std::vector<NodeName> MigNodesInPool(const Simulator& sim, const std::optional<std::string>& pool) {
  std::vector<NodeName> out;
  for (const NodeName& name : sim.mig_nodes()) {
    if (pool) {
      auto idx = sim.state().FindNode(name);
      if (!idx || sim.state().node(*idx).spec.pool != *pool) continue;
    }
    out.push_back(name);
  }
  return out;
}

std::optional<MigPlacement> PlaceMigDevices(const Simulator& sim, const Job& j, NodeOrder order) {
  std::optional<MigPlacement> best;
  int best_free = 0;
  for (const NodeName& name : MigNodesInPool(sim, j.pool)) {
    const placement::MigNode& node = *sim.mig().Find(name);
    if (node.Free(j.mig_profile) < j.gpus_per_replica) continue;
    const int free = node.FreeCompute();
    const bool better = !best || (order == NodeOrder::kBestFit && free < best_free) ||
                        (order == NodeOrder::kSpread && free > best_free);
    if (!better) continue;
    MigPlacement p{name, {}};
    for (size_t i = 0; i < node.slices().size() && static_cast<int>(p.devices.size()) < j.gpus_per_replica; ++i)
      if (node.IsFree(i) && node.slices()[i].profile == j.mig_profile) p.devices.push_back(static_cast<int>(i));
    best = std::move(p);
    best_free = free;
    if (order == NodeOrder::kFirstFit) break;
  }
  return best;
}

}  // namespace phalanx::sim
