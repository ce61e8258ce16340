#include "core/placement/node_score.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/placement/device_set_cache.h"

namespace phalanx::placement {
namespace {

bool IsShare(const PodRequest& r) { return r.milli < kMilliPerGpu; }
bool ValidRequest(const PodRequest& r) {
  return r.milli >= 1 && r.milli <= kMilliPerGpu && (IsShare(r) || (r.gpus >= 1 && r.gpus <= kMaxGpusPerNode));
}

// GPUs in a mask. std::popcount is a libgcc call in this build (no -mpopcnt), 7 % of a
// 5,000-name filter; the SWAR count is a dozen inline instructions.
int CountGpus(GpuMask m) {
  m -= (m >> 1) & 0x5555555555555555ull;
  m = (m & 0x3333333333333333ull) + ((m >> 2) & 0x3333333333333333ull);
  m = (m + (m >> 4)) & 0x0f0f0f0f0f0f0f0full;
  return static_cast<int>((m * 0x0101010101010101ull) >> 56);
}

// GPUs of `node` reserved by the pod's own plan (they count as free for it).
GpuMask OwnReserved(const ClusterState& s, NodeIndex node, const PodRequest& r) {
  if (!r.own_plan) return 0;
  const Reservation* res = s.FindReservation(*r.own_plan);
  if (!res) return 0;
  const NodeState& n = s.node(node);
  GpuMask mask = 0;
  for (size_t m = 0; m < res->members.size(); ++m)
    if (!res->committed[m] && res->members[m].node == n.spec.name) mask |= res->members[m].gpus;
  return mask & WholeGpus(n.spec);
}

// Healthy GPUs wholly held by pods of strictly lower priority, and per GPU the milli
// held by lower-priority shares.
struct LowerTier {
  GpuMask whole = 0;
  std::array<int, kMaxGpusPerNode> share_milli{};
};

LowerTier LowerTierHoldings(const NodeState& n, int priority) {
  LowerTier out;
  if (priority <= n.lowest_priority) return out;  // no holder is of a lower tier: skip the walk
  for (const PodAllocation* p : n.pods) {
    if (p->priority >= priority) continue;
    if (p->milli >= kMilliPerGpu) out.whole |= p->gpus & WholeGpus(n.spec);
    else out.share_milli[static_cast<size_t>(std::countr_zero(p->gpus))] += p->milli;
  }
  return out;
}

// Healthy GPUs preemption of strictly lower-priority pods would free: whole GPUs of such
// pods, and shared GPUs whose every share is of such pods. From the node's holder tiers,
// O(tiers below `priority`), not a walk of its pods: a full cluster sends every node here.
GpuMask LowerTierGpus(const NodeState& n, int priority) {
  if (priority <= n.lowest_priority) return 0;
  GpuMask gpus = 0;
  for (const HolderTier& t : n.tiers) {
    if (t.priority >= priority) break;
    gpus |= t.gpus;
  }
  return gpus & WholeGpus(n.spec);
}

// Best-fitting GPU for a share: the one with the least free milli that still fits.
int ShareGpu(const ClusterState& s, NodeIndex node, int milli) {
  int best = -1, best_free = kMilliPerGpu + 1;
  for (int g = 0; g < s.node(node).spec.gpu_count; ++g) {
    const int f = s.FreeMilli(node, g);
    if (f >= milli && f < best_free) {
      best = g;
      best_free = f;
    }
  }
  return best;
}

Feasibility CheckShare(const ClusterState& s, NodeIndex node, const PodRequest& r, Feasibility f) {
  const NodeState& n = s.node(node);
  f.requested = r.milli;
  if (f.capacity == 0) {
    f.reason = UnfitReason::kTooFewGpus;
    return f;
  }
  if (f.healthy == 0) {
    f.reason = UnfitReason::kUnhealthyGpus;
    return f;
  }
  const LowerTier lower = LowerTierHoldings(n, r.priority);
  bool lower_helps = false;
  for (int g = 0; g < n.spec.gpu_count; ++g) {
    const GpuMask bit = GpuMask{1} << g;
    if (!(WholeGpus(n.spec) & bit)) continue;
    const int free = s.FreeMilli(node, g);
    f.free = std::max(f.free, free);
    if (n.reserved & bit) {
      f.reserved = kMilliPerGpu;
      continue;
    }
    // Milli this GPU would gain if its lower-tier holders were preempted.
    const int gain = (lower.whole & bit) ? kMilliPerGpu : lower.share_milli[static_cast<size_t>(g)];
    f.preemptible = std::max(f.preemptible, gain);
    if (free + gain >= r.milli) lower_helps = true;
  }
  if (f.free >= r.milli) f.reason = UnfitReason::kFits;
  else if (lower_helps) f.reason = UnfitReason::kInUseByLowerTiers;
  else if (f.reserved > 0) f.reason = UnfitReason::kReservedByPlans;
  else f.reason = UnfitReason::kInUseByHigherTiers;
  return f;
}

}  // namespace

Feasibility CheckFeasibility(const ClusterState& s, NodeIndex node, const PodRequest& r) {
  const NodeState& n = s.node(node);
  Feasibility f;
  f.capacity = n.spec.gpu_count - CountGpus(n.spec.mig);  // MIG-mode GPUs are not whole GPUs
  f.healthy = CountGpus(WholeGpus(n.spec));
  f.node_pool = n.spec.pool;
  if (r.pool && n.spec.pool != *r.pool) {
    f.reason = UnfitReason::kWrongPool;
    return f;
  }
  if (!n.spec.schedulable) {
    f.reason = UnfitReason::kNodeUnschedulable;
    return f;
  }
  if (IsShare(r)) return CheckShare(s, node, r, f);
  f.requested = r.gpus;
  if (f.capacity < r.gpus) {
    f.reason = UnfitReason::kTooFewGpus;
    return f;
  }
  if (f.healthy < r.gpus) {
    f.reason = UnfitReason::kUnhealthyGpus;
    return f;
  }
  const GpuMask own = OwnReserved(s, node, r);
  f.free = CountGpus(n.free | own);
  if (f.free >= r.gpus) return f;
  f.preemptible = CountGpus(LowerTierGpus(n, r.priority));
  f.reserved = CountGpus(n.reserved & WholeGpus(n.spec) & ~own);
  if (f.free + f.preemptible >= r.gpus) f.reason = UnfitReason::kInUseByLowerTiers;
  else if (f.reserved > 0 && f.free + f.preemptible + f.reserved >= r.gpus) f.reason = UnfitReason::kReservedByPlans;
  else f.reason = UnfitReason::kInUseByHigherTiers;
  return f;
}

std::string FormatFeasibility(const Feasibility& f, std::string_view resource) {
  switch (f.reason) {
    case UnfitReason::kFits: return "fits";
    case UnfitReason::kNodeUnschedulable: return "node is unschedulable (cordoned)";
    case UnfitReason::kWrongPool:
      return fmt::format("node's GPU product is {}, not the one the pod needs",
                         f.node_pool.empty() ? std::string_view("(unlabelled)") : f.node_pool);
    case UnfitReason::kTooFewGpus:
      return fmt::format("Insufficient {}: requested {}, node has {} GPUs in total", resource, f.requested, f.capacity);
    case UnfitReason::kUnhealthyGpus:
      return fmt::format("Insufficient {}: requested {}, only {} of {} GPUs healthy", resource, f.requested, f.healthy,
                         f.capacity);
    case UnfitReason::kReservedByPlans:
      return fmt::format("Insufficient {}: requested {}, free {} ({} reserved by gang plans)", resource, f.requested,
                         f.free, f.reserved);
    case UnfitReason::kInUseByHigherTiers:
      return fmt::format("Insufficient {}: requested {}, free {} (in use by equal or higher tiers)", resource,
                         f.requested, f.free);
    case UnfitReason::kInUseByLowerTiers:
      return fmt::format("Insufficient {}: requested {}, free {} ({} held by lower tiers)", resource, f.requested,
                         f.free, f.preemptible);
  }
  return "unknown";
}

int NodeScore::Rounded() const {
  const long r = std::lround(total);
  return static_cast<int>(std::clamp(r, 0L, 10L));
}

Result<NodeScore> ScoreNode(const ClusterState& s, NodeIndex node, const PodRequest& r, const ScoreWeights& w,
                            const GangContext& gang) {
  if (!ValidRequest(r)) {
    return InvalidArgumentError(fmt::format("pod request of {} GPUs x {} milli is invalid", r.gpus, r.milli));
  }
  const Feasibility f = CheckFeasibility(s, node, r);
  if (!f.fits()) return FailedPreconditionError(FormatFeasibility(f));
  const NodeState& n = s.node(node);
  const int healthy = std::popcount(WholeGpus(n.spec));
  NodeScore out;
  if (IsShare(r)) {
    const int gpu = ShareGpu(s, node, r.milli);
    out.gpus = GpuMask{1} << gpu;
    out.ring_bandwidth_gbps = std::numeric_limits<double>::infinity();
    out.topology = 10;
    int free_milli = 0;
    for (int g = 0; g < n.spec.gpu_count; ++g)
      if (WholeGpus(n.spec) & (GpuMask{1} << g)) free_milli += s.FreeMilli(node, g);
    // Milli-GPUs in use after placing, out of the node's healthy capacity.
    const double cap = static_cast<double>(healthy) * kMilliPerGpu;
    out.packing = 10.0 * (cap - static_cast<double>(free_milli - r.milli)) / cap;
  } else {
    const GpuMask avail = n.free | OwnReserved(s, node, r);
    const auto choice = ChooseDeviceSetCached(n.spec.bandwidth, avail, r.gpus);
    out.gpus = choice->gpus;  // feasibility guarantees a choice
    out.ring_bandwidth_gbps = choice->ring_bandwidth_gbps;
    out.topology_known = n.spec.bandwidth != nullptr;
    out.topology = 10.0 * TopologyRatio(n.spec.bandwidth, WholeGpus(n.spec), r.gpus, choice->ring_bandwidth_gbps);
    // GPUs in use after placing / healthy GPUs (k8s MostAllocated).
    const int free_after = std::popcount(avail) - r.gpus;
    out.packing = 10.0 * static_cast<double>(healthy - free_after) / static_cast<double>(healthy);
  }
  out.packing = std::clamp(out.packing, 0.0, 10.0);
  if (!gang.member_nodes.empty()) {
    out.locality_applies = true;
    const int levels = static_cast<int>(s.levels().size());
    int lowest = -1;  // lowest shared level; 0 also for the same node
    for (NodeIndex other : gang.member_nodes) {
      if (other == node) {
        lowest = 0;
        break;
      }
      const NodeState& o = s.node(other);
      for (int l = 0; l < levels && (lowest < 0 || l < lowest); ++l) {
        const DomainId d = n.domains[static_cast<size_t>(l)];
        if (d != kNoDomain && d == o.domains[static_cast<size_t>(l)]) {
          lowest = l;
          break;
        }
      }
    }
    const double denom = std::max(levels, 1);
    out.locality = lowest < 0 ? 0.0 : 10.0 * (denom - lowest) / denom;
  }
  double num = w.packing * out.packing, den = w.packing;
  if (out.topology_known) {
    num += w.topology * out.topology;
    den += w.topology;
  }
  if (out.locality_applies) {
    num += w.locality * out.locality;
    den += w.locality;
  }
  out.total = den > 0 ? std::clamp(num / den, 0.0, 10.0) : 0.0;
  return out;
}

std::vector<std::optional<NodeScore>> ScoreNodes(const ClusterState& s, std::span<const NodeIndex> nodes,
                                                 const PodRequest& r, const ScoreWeights& w) {
  std::vector<std::optional<NodeScore>> out(nodes.size());
  if (!ValidRequest(r)) return out;  // ScoreNode: InvalidArgument for every node
  // What a whole-GPU score reads besides the request and the weights (ScoreNode above):
  // shares pick a GPU by each one's milli in use, so they are scored node by node.
  struct Seen {
    const BandwidthMatrix* bandwidth;
    GpuMask whole, avail;
    NodeScore score;
  };
  constexpr size_t kMaxSeen = 64;  // past it, score the rest node by node
  std::vector<Seen> seen;
  const Seen* last = nullptr;
  constexpr size_t kAhead = 4;  // nodes are scattered in memory: start loading the next ones
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (i + kAhead < nodes.size() && nodes[i + kAhead] >= 0) {
      const char* ahead = reinterpret_cast<const char*>(&s.node(nodes[i + kAhead]));
      for (size_t line = 0; line < sizeof(NodeState); line += 64) __builtin_prefetch(ahead + line);
    }
    const NodeIndex node = nodes[i];
    if (node < 0 || !CheckFeasibility(s, node, r).fits()) continue;
    if (IsShare(r)) {
      if (auto score = ScoreNode(s, node, r, w); score.ok()) out[i] = *score;
      continue;
    }
    const NodeState& n = s.node(node);
    const Seen key{n.spec.bandwidth.get(), WholeGpus(n.spec), n.free | OwnReserved(s, node, r), {}};
    auto same = [&](const Seen& e) { return e.bandwidth == key.bandwidth && e.whole == key.whole && e.avail == key.avail; };
    if (!last || !same(*last)) {
      auto it = std::find_if(seen.begin(), seen.end(), same);
      if (it == seen.end()) {
        auto score = ScoreNode(s, node, r, w);
        if (!score.ok()) continue;
        if (seen.size() == kMaxSeen) {
          out[i] = *score;
          continue;
        }
        if (seen.capacity() == 0) seen.reserve(kMaxSeen);  // `last` must stay valid
        it = seen.insert(seen.end(), Seen{key.bandwidth, key.whole, key.avail, *score});
      }
      last = &*it;
    }
    out[i] = last->score;
  }
  return out;
}

std::optional<NodeChoice> PickBestNode(const ClusterState& s, const PodRequest& r, const ScoreWeights& w,
                                       const GangContext& gang) {
  std::vector<PoolId> pools;
  if (r.pool) {
    const PoolId p = s.FindPool(*r.pool);
    if (p == kNoPool) return std::nullopt;
    pools.push_back(p);
  } else {
    for (PoolId p = 0; p < s.PoolCount(); ++p) pools.push_back(p);
  }
  std::optional<NodeChoice> best;
  int best_free = 0;
  auto consider = [&](NodeIndex i) {
    Result<NodeScore> sc = ScoreNode(s, i, r, w, gang);
    if (!sc.ok()) return;
    const int free = std::popcount(s.node(i).free);
    const bool better = !best || sc->total > best->score.total ||
                        (sc->total == best->score.total &&
                         (free < best_free || (free == best_free && s.node(i).spec.name < s.node(best->node).spec.name)));
    if (better) {
      best = NodeChoice{i, *sc};
      best_free = free;
    }
  };
  // Whole GPUs without a plan: only buckets with enough free GPUs can fit. Shares and
  // plan-owned reservations need the full scan.
  const bool scan_all = IsShare(r) || r.own_plan.has_value();
  for (PoolId p : pools) {
    const PoolInfo& info = s.pool(p);
    if (scan_all) {
      for (NodeIndex i : info.nodes) consider(i);
    } else {
      for (int f = std::max(r.gpus, 0); f <= kMaxGpusPerNode; ++f)
        for (NodeIndex i : info.buckets[static_cast<size_t>(f)]) consider(i);
    }
  }
  return best;
}

}  // namespace phalanx::placement
