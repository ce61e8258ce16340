#include "core/placement/device_set.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <functional>
#include <limits>
#include <numeric>

#include <fmt/format.h>

namespace phalanx::placement {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Above this many candidate subsets the exhaustive search gives way to the bounded one.
// C(12,6) = 924 keeps a 12-GPU node exhaustive; 8 of 16 (12,870) is bounded.
constexpr uint64_t kExhaustiveSubsetBudget = 2000;
// DFS steps allowed when looking for a ring in a non-clique link graph.
constexpr int kRingSearchBudget = 20000;
constexpr int kExactRingLimit = 16;
// DFS steps for the quick ring search before the exact DP takes over.
constexpr int kQuickRingBudget = 200;

uint64_t Binomial(int n, int k) {
  if (k < 0 || k > n) return 0;
  k = std::min(k, n - k);
  uint64_t r = 1;
  for (int i = 1; i <= k; ++i) {
    r = r * static_cast<uint64_t>(n - k + i) / static_cast<uint64_t>(i);
    if (r > (1ull << 40)) return r;  // large enough to mean "too many"
  }
  return r;
}

std::vector<int> MaskToList(GpuMask mask) {
  std::vector<int> out;
  while (mask) {
    out.push_back(std::countr_zero(mask));
    mask &= mask - 1;
  }
  return out;
}

// Hamiltonian-cycle test over `nodes` using only links >= threshold (bitmask DP,
// |nodes| <= kExactRingLimit). Exponential: only reached when the cheap exact tests in
// RingAtLevel cannot decide.
bool HasRingAtLeast(std::span<const GpuMask> adj, std::span<const int> nodes) {
  const int k = static_cast<int>(nodes.size());
  std::vector<uint32_t> local(static_cast<size_t>(k), 0);
  for (int a = 0; a < k; ++a)
    for (int b = 0; b < k; ++b)
      if (a != b && (adj[static_cast<size_t>(nodes[a])] >> nodes[b] & 1)) local[a] |= 1u << b;
  // reach[mask] = set of end vertices of paths that start at vertex 0 and visit `mask`.
  thread_local std::vector<uint32_t> reach;
  reach.assign(size_t{1} << k, 0);
  reach[1] = 1;
  const uint32_t full = (1u << k) - 1;
  for (uint32_t mask = 1; mask <= full; mask += 2) {  // masks containing vertex 0
    uint32_t ends = reach[mask];
    while (ends) {
      int v = std::countr_zero(ends);
      ends &= ends - 1;
      uint32_t next = local[v] & ~mask;
      while (next) {
        int u = std::countr_zero(next);
        next &= next - 1;
        reach[mask | (1u << u)] |= 1u << u;
      }
    }
  }
  uint32_t ends = reach[full];
  while (ends) {
    int v = std::countr_zero(ends);
    ends &= ends - 1;
    if (local[v] & 1u) return true;
  }
  return false;
}

// Depth-first search for a Hamiltonian cycle through `set`, neighbour with the fewest
// onward options first (Warnsdorff). Finds the cycle in a few steps on the link graphs
// of real machines; `budget` caps it so a graph without one falls through to the DP.
bool QuickRing(std::span<const GpuMask> adj, GpuMask set, int budget) {
  const int start = std::countr_zero(set);
  const int k = std::popcount(set);
  std::function<bool(int, GpuMask, int)> extend = [&](int last, GpuMask used, int len) -> bool {
    if (--budget < 0) return false;
    if (len == k) return (adj[static_cast<size_t>(last)] >> start & 1) != 0;
    GpuMask options = adj[static_cast<size_t>(last)] & set & ~used;
    std::vector<std::pair<int, int>> next;  // (onward degree, node)
    while (options) {
      int u = std::countr_zero(options);
      options &= options - 1;
      next.emplace_back(std::popcount(adj[static_cast<size_t>(u)] & set & ~used), u);
    }
    std::sort(next.begin(), next.end());
    for (auto [degree, u] : next) {
      if (extend(u, used | GpuMask{1} << u, len + 1)) return true;
      if (budget < 0) return false;
    }
    return false;
  };
  return extend(start, GpuMask{1} << start, 1);
}

// Connected over the links in `adj`?
bool Connected(std::span<const GpuMask> adj, GpuMask set) {
  GpuMask seen = set & (~set + 1), frontier = seen;
  while (frontier) {
    int v = std::countr_zero(frontier);
    frontier &= frontier - 1;
    GpuMask fresh = adj[static_cast<size_t>(v)] & set & ~seen;
    seen |= fresh;
    frontier |= fresh;
  }
  return seen == set;
}

// Is there a ring through every GPU of `set` using only the links in `adj` (the links at
// or above one bandwidth threshold)? Exact for |set| <= kExactRingLimit. Cheap exact
// tests first: a vertex with fewer than two links or a disconnected graph rules a ring
// out; Dirac's theorem (every degree >= |set|/2) guarantees one; a short Warnsdorff DFS
// usually finds one. Only what is left goes to the exponential DP.
bool RingAtLevel(std::span<const GpuMask> adj, GpuMask set) {
  const int k = std::popcount(set);
  if (k <= 1) return true;
  const int first = std::countr_zero(set);
  if (k == 2) return (adj[static_cast<size_t>(first)] & set) != 0;
  int min_degree = k;
  for (GpuMask left = set; left; left &= left - 1) {
    int d = std::popcount(adj[static_cast<size_t>(std::countr_zero(left))] & set);
    if (d < 2) return false;
    min_degree = std::min(min_degree, d);
  }
  if (2 * min_degree >= k) return true;  // Dirac
  if (!Connected(adj, set)) return false;
  if (QuickRing(adj, set, kQuickRingBudget)) return true;
  if (k > kExactRingLimit) return false;
  return HasRingAtLeast(adj, MaskToList(set));
}

// A node's link graph at each distinct bandwidth: levels[i] has the links >= thresholds[i]
// (thresholds descending) as one neighbour mask per GPU. Built once per request so
// every subset test is a handful of mask operations.
struct LinkLevels {
  std::vector<double> thresholds;
  std::vector<std::vector<GpuMask>> adj;  // [level][gpu]
  std::span<const GpuMask> at(size_t level) const { return adj[level]; }
};

// Distinct link bandwidths among `nodes`, descending.
std::vector<double> Thresholds(const BandwidthMatrix& bw, std::span<const int> nodes) {
  std::vector<double> values;
  for (size_t a = 0; a < nodes.size(); ++a)
    for (size_t b = a + 1; b < nodes.size(); ++b) values.push_back(bw.at(nodes[a], nodes[b]));
  std::sort(values.begin(), values.end(), std::greater<>());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return values;
}

// Connected components of the graph over `nodes` with links >= threshold, as masks.
std::vector<GpuMask> Components(const BandwidthMatrix& bw, GpuMask nodes, double threshold) {
  std::vector<GpuMask> comps;
  GpuMask left = nodes;
  while (left) {
    int seed = std::countr_zero(left);
    GpuMask comp = GpuMask{1} << seed, frontier = comp;
    left &= ~comp;
    while (frontier) {
      int v = std::countr_zero(frontier);
      frontier &= frontier - 1;
      GpuMask scan = left;
      while (scan) {
        int u = std::countr_zero(scan);
        scan &= scan - 1;
        if (bw.at(v, u) >= threshold) {
          GpuMask bit = GpuMask{1} << u;
          comp |= bit;
          frontier |= bit;
          left &= ~bit;
        }
      }
    }
    comps.push_back(comp);
  }
  return comps;
}

LinkLevels BuildLevels(const BandwidthMatrix& bw, std::span<const int> gpus) {
  LinkLevels levels;
  levels.thresholds = Thresholds(bw, gpus);
  levels.adj.assign(levels.thresholds.size(), std::vector<GpuMask>(static_cast<size_t>(bw.size()), 0));
  for (size_t l = 0; l < levels.thresholds.size(); ++l)
    for (int a : gpus)
      for (int b : gpus)
        if (a != b && bw.at(a, b) >= levels.thresholds[l]) levels.adj[l][static_cast<size_t>(a)] |= GpuMask{1} << b;
  return levels;
}

// How well connected the GPUs left free are: for each threshold (best first), the
// number of links at least that fast among them, then the size of the largest group
// connected at that speed. Compared lexicographically, larger is better. Counting links
// (not just connectivity) matters on meshes: a path 1-3, 1-5, 5-4 is connected but has
// no fast ring, while an intact quad has six fast links.
void FragmentationKey(const LinkLevels& levels, GpuMask remaining, std::vector<int>& key) {
  key.clear();
  for (size_t l = 0; l < levels.thresholds.size(); ++l) {
    std::span<const GpuMask> adj = levels.at(l);
    int degree_sum = 0, largest = 0;
    for (GpuMask left = remaining; left; left &= left - 1)
      degree_sum += std::popcount(adj[static_cast<size_t>(std::countr_zero(left))] & remaining);
    for (GpuMask left = remaining; left;) {
      GpuMask comp = left & (~left + 1), frontier = comp;
      while (frontier) {
        int v = std::countr_zero(frontier);
        frontier &= frontier - 1;
        GpuMask fresh = adj[static_cast<size_t>(v)] & remaining & ~comp;
        comp |= fresh;
        frontier |= fresh;
      }
      left &= ~comp;
      largest = std::max(largest, std::popcount(comp));
    }
    key.push_back(degree_sum / 2);
    key.push_back(largest);
  }
}

// Bottleneck of the best ring through `set`, looking only at levels down to `floor`
// (inclusive): -1 when no ring reaches `floor`. The bottleneck is always one of the
// set's links, and every such link value is a level, so the first level with a ring is
// exactly the bottleneck.
double RingBottleneckAtLeast(const LinkLevels& levels, GpuMask set, double floor) {
  if (std::popcount(set) <= 1) return kInf;
  for (size_t l = 0; l < levels.thresholds.size() && levels.thresholds[l] >= floor; ++l)
    if (RingAtLevel(levels.at(l), set)) return levels.thresholds[l];
  return -1;
}

bool IsClique(const BandwidthMatrix& bw, GpuMask nodes, double threshold) {
  std::vector<int> list = MaskToList(nodes);
  for (size_t a = 0; a < list.size(); ++a)
    for (size_t b = a + 1; b < list.size(); ++b)
      if (bw.at(list[a], list[b]) < threshold) return false;
  return true;
}

DeviceSetChoice MakeChoice(const BandwidthMatrix& bw, GpuMask set, bool exhaustive) {
  DeviceSetChoice c;
  c.gpus = MaskToList(set);
  c.ring_bandwidth_gbps = RingBottleneck(bw, c.gpus);
  c.exhaustive = exhaustive;
  return c;
}

// Every subset, ranked by (ring bottleneck, fragmentation key), ties to the first in
// lexicographic order of GPU indices. A subset whose ring cannot reach the best found
// so far is dropped without computing its key.
DeviceSetChoice ExhaustiveChoice(const BandwidthMatrix& bw, const DeviceSetRequest& req) {
  const std::vector<int> optional = MaskToList(req.available & ~req.must_include);
  const int pick = req.count - std::popcount(req.must_include);
  const LinkLevels levels = BuildLevels(bw, MaskToList(req.available));

  GpuMask best_set = 0;
  double best_ring = -1;
  std::vector<int> best_key, key;
  // Combinations in lexicographic order, so ties keep the lowest indices.
  std::vector<int> idx(static_cast<size_t>(pick));
  std::iota(idx.begin(), idx.end(), 0);
  const int n = static_cast<int>(optional.size());
  while (true) {
    GpuMask set = req.must_include;
    for (int i : idx) set |= GpuMask{1} << optional[static_cast<size_t>(i)];
    double ring = RingBottleneckAtLeast(levels, set, best_ring);
    if (ring >= best_ring) {
      FragmentationKey(levels, req.available & ~set, key);
      if (ring > best_ring || key > best_key) {
        best_set = set;
        best_ring = ring;
        std::swap(best_key, key);
      }
    }
    int i = pick - 1;
    while (i >= 0 && idx[static_cast<size_t>(i)] == n - pick + i) --i;
    if (i < 0) break;
    ++idx[static_cast<size_t>(i)];
    for (int j = i + 1; j < pick; ++j) idx[static_cast<size_t>(j)] = idx[static_cast<size_t>(j - 1)] + 1;
  }
  return MakeChoice(bw, best_set, /*exhaustive=*/true);
}

// Inside a group where every pair is at least as fast as the bottleneck we can reach,
// any subset is equally fast; use the leftovers first: take whole faster sub-groups in
// ascending size, so the big fast sub-groups stay intact for later.
GpuMask PickWithinClique(const BandwidthMatrix& bw, GpuMask clique, const DeviceSetRequest& req,
                         std::span<const double> faster_thresholds) {
  GpuMask chosen = req.must_include;
  int need = req.count - std::popcount(chosen);
  GpuMask rest = clique & ~chosen;
  if (need == 0) return chosen;
  // The next faster level's groups (or singletons when there is none).
  std::vector<GpuMask> groups;
  if (faster_thresholds.empty()) {
    for (int g : MaskToList(rest)) groups.push_back(GpuMask{1} << g);
  } else {
    groups = Components(bw, rest, faster_thresholds.back());
  }
  std::stable_sort(groups.begin(), groups.end(), [](GpuMask a, GpuMask b) {
    return std::popcount(a) != std::popcount(b) ? std::popcount(a) < std::popcount(b)
                                                : std::countr_zero(a) < std::countr_zero(b);
  });
  for (GpuMask g : groups) {
    if (std::popcount(g) <= need) {
      chosen |= g;
      need -= std::popcount(g);
    }
  }
  for (GpuMask g : groups) {  // partial group, lowest indices first
    for (int gpu : MaskToList(g & ~chosen)) {
      if (need == 0) break;
      chosen |= GpuMask{1} << gpu;
      --need;
    }
  }
  return chosen;
}

// Depth-first search for `count` GPUs of `group` forming a ring with links >= threshold.
// Extends paths towards the neighbour with the fewest onward options (Warnsdorff), which
// finds rings quickly in the sparse meshes (hybrid cube-mesh) where this runs.
GpuMask SearchRing(const BandwidthMatrix& bw, GpuMask group, int count, double threshold) {
  std::vector<int> nodes = MaskToList(group);
  int budget = kRingSearchBudget;
  std::vector<int> path;
  GpuMask used = 0;
  std::function<bool()> extend = [&]() -> bool {
    if (--budget < 0) return false;
    int last = path.back();
    if (static_cast<int>(path.size()) == count) {
      return count <= 2 ? (count == 1 || bw.at(path[0], last) >= threshold)
                        : bw.at(path[0], last) >= threshold;
    }
    std::vector<std::pair<int, int>> next;  // (onward degree, node)
    for (int u : nodes) {
      if (used & (GpuMask{1} << u) || bw.at(last, u) < threshold) continue;
      int degree = 0;
      for (int w : nodes)
        if (w != u && !(used & (GpuMask{1} << w)) && bw.at(u, w) >= threshold) ++degree;
      next.emplace_back(degree, u);
    }
    std::sort(next.begin(), next.end());
    for (auto [degree, u] : next) {
      path.push_back(u);
      used |= GpuMask{1} << u;
      if (extend()) return true;
      used &= ~(GpuMask{1} << u);
      path.pop_back();
      if (budget < 0) return false;
    }
    return false;
  };
  for (int start : nodes) {
    path.assign(1, start);
    used = GpuMask{1} << start;
    if (extend()) return used;
    if (budget < 0) break;
  }
  return 0;
}

DeviceSetChoice BoundedChoice(const BandwidthMatrix& bw, const DeviceSetRequest& req) {
  const std::vector<double> thresholds = Thresholds(bw, MaskToList(req.available));
  for (size_t ti = 0; ti < thresholds.size(); ++ti) {
    const double t = thresholds[ti];
    std::vector<GpuMask> comps = Components(bw, req.available, t);
    // Best fit: the smallest group that can hold the request.
    std::stable_sort(comps.begin(), comps.end(),
                     [](GpuMask a, GpuMask b) { return std::popcount(a) < std::popcount(b); });
    for (GpuMask comp : comps) {
      if (std::popcount(comp) < req.count || (comp & req.must_include) != req.must_include) continue;
      if (IsClique(bw, comp, t)) {
        GpuMask set = PickWithinClique(bw, comp, req, std::span(thresholds).first(ti));
        return MakeChoice(bw, set, /*exhaustive=*/false);
      }
      if (req.must_include == 0) {
        GpuMask set = SearchRing(bw, comp, req.count, t);
        if (set) return MakeChoice(bw, set, /*exhaustive=*/false);
      }
    }
  }
  // The slowest threshold joins every pair, so the loop returns unless the matrix has
  // no links at all (available has a single GPU): take what is there.
  return MakeChoice(bw, PickWithinClique(bw, req.available, req, {}), /*exhaustive=*/false);
}

}  // namespace

BandwidthMatrix::BandwidthMatrix(int gpus)
    : n_(gpus), bw_(static_cast<size_t>(gpus) * static_cast<size_t>(gpus), 0.0) {}

void BandwidthMatrix::Set(int i, int j, double gbps) {
  bw_[static_cast<size_t>(i * n_ + j)] = gbps;
  bw_[static_cast<size_t>(j * n_ + i)] = gbps;
}

double RingBottleneck(const BandwidthMatrix& bw, std::span<const int> gpus) {
  const size_t k = gpus.size();
  if (k <= 1) return kInf;
  if (k == 2) return bw.at(gpus[0], gpus[1]);
  if (k <= kExactRingLimit) {
    GpuMask set = 0;
    for (int g : gpus) set |= GpuMask{1} << g;
    double ring = RingBottleneckAtLeast(BuildLevels(bw, gpus), set, -1);
    return ring < 0 ? 0 : ring;  // < 0 unreachable: the slowest level is complete
  }
  // Greedy nearest-neighbour ring: a valid ring, so its bottleneck is a lower bound.
  std::vector<int> order(gpus.begin(), gpus.end());
  for (size_t i = 1; i < k; ++i) {
    size_t best = i;
    for (size_t j = i + 1; j < k; ++j)
      if (bw.at(order[i - 1], order[j]) > bw.at(order[i - 1], order[best])) best = j;
    std::swap(order[i], order[best]);
  }
  double bottleneck = bw.at(order[k - 1], order[0]);
  for (size_t i = 1; i < k; ++i) bottleneck = std::min(bottleneck, bw.at(order[i - 1], order[i]));
  return bottleneck;
}

Result<DeviceSetChoice> ChooseDeviceSet(const BandwidthMatrix& bw, const DeviceSetRequest& req) {
  const int n = bw.size();
  if (n < 1 || n > kMaxGpusPerNode) {
    return InvalidArgumentError(fmt::format("node has {} GPUs; supported: 1..{}", n, kMaxGpusPerNode));
  }
  const GpuMask all = n == 64 ? ~GpuMask{0} : (GpuMask{1} << n) - 1;
  if (req.count < 1) return InvalidArgumentError(fmt::format("count {} must be at least 1", req.count));
  if (req.available & ~all) return InvalidArgumentError("available GPUs outside the node's GPU range");
  if ((req.must_include & req.available) != req.must_include) {
    return InvalidArgumentError("must-include GPUs are not all available");
  }
  if (std::popcount(req.must_include) > req.count) {
    return InvalidArgumentError(fmt::format("{} must-include GPUs exceed the requested count {}",
                                            std::popcount(req.must_include), req.count));
  }
  const int free = std::popcount(req.available);
  if (free < req.count) {
    return ResourceExhaustedError(fmt::format("{} GPUs requested, {} available", req.count, free));
  }
  const int optional = free - std::popcount(req.must_include);
  const int pick = req.count - std::popcount(req.must_include);
  if (Binomial(optional, pick) <= kExhaustiveSubsetBudget && req.count <= kExactRingLimit) {
    return ExhaustiveChoice(bw, req);
  }
  return BoundedChoice(bw, req);
}

}  // namespace phalanx::placement
