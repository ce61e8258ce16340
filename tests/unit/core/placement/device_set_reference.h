// The exhaustive device-set search as it was before the fast rewrite (bitmask DP ring
// test for every subset, list-based fragmentation key): slow but obviously right. The
// equivalence test checks the production search against it on small random nodes.
#pragma once

#include <algorithm>
#include <bit>
#include <functional>
#include <limits>
#include <numeric>
#include <span>
#include <vector>

#include "core/placement/device_set.h"

namespace phalanx::placement::reference {

double ReferenceRingBottleneck(const BandwidthMatrix& bw, std::span<const int> gpus);

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int kExactRingLimit = 16;

inline uint64_t Binomial(int n, int k) {
  if (k < 0 || k > n) return 0;
  k = std::min(k, n - k);
  uint64_t r = 1;
  for (int i = 1; i <= k; ++i) {
    r = r * static_cast<uint64_t>(n - k + i) / static_cast<uint64_t>(i);
    if (r > (1ull << 40)) return r;  // large enough to mean "too many"
  }
  return r;
}

inline std::vector<int> MaskToList(GpuMask mask) {
  std::vector<int> out;
  while (mask) {
    out.push_back(std::countr_zero(mask));
    mask &= mask - 1;
  }
  return out;
}

// Hamiltonian-cycle test over `nodes` using only links >= threshold (bitmask DP,
// |nodes| <= kExactRingLimit).
inline bool HasRingAtLeast(const BandwidthMatrix& bw, std::span<const int> nodes, double threshold) {
  const int k = static_cast<int>(nodes.size());
  if (k <= 1) return true;
  if (k == 2) return bw.at(nodes[0], nodes[1]) >= threshold;
  std::vector<uint32_t> adj(static_cast<size_t>(k), 0);
  for (int a = 0; a < k; ++a)
    for (int b = 0; b < k; ++b)
      if (a != b && bw.at(nodes[a], nodes[b]) >= threshold) adj[a] |= 1u << b;
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
      uint32_t next = adj[v] & ~mask;
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
    if (adj[v] & 1u) return true;
  }
  return false;
}

// Distinct link bandwidths among `nodes`, descending.
inline std::vector<double> Thresholds(const BandwidthMatrix& bw, std::span<const int> nodes) {
  std::vector<double> values;
  for (size_t a = 0; a < nodes.size(); ++a)
    for (size_t b = a + 1; b < nodes.size(); ++b) values.push_back(bw.at(nodes[a], nodes[b]));
  std::sort(values.begin(), values.end(), std::greater<>());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return values;
}

// Connected components of the graph over `nodes` with links >= threshold, as masks.
inline std::vector<GpuMask> Components(const BandwidthMatrix& bw, GpuMask nodes, double threshold) {
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

// How well connected the GPUs left free are: for each threshold (best first), the
// number of links at least that fast among them, then the size of the largest group
// connected at that speed. Compared lexicographically, larger is better. Counting links
// (not just connectivity) matters on meshes: a path 1-3, 1-5, 5-4 is connected but has
// no fast ring, while an intact quad has six fast links.
inline std::vector<int> FragmentationKey(const BandwidthMatrix& bw, GpuMask remaining,
                                  const std::vector<double>& thresholds) {
  std::vector<int> key;
  key.reserve(2 * thresholds.size());
  const std::vector<int> left = MaskToList(remaining);
  for (double t : thresholds) {
    int links = 0;
    for (size_t a = 0; a < left.size(); ++a)
      for (size_t b = a + 1; b < left.size(); ++b) links += bw.at(left[a], left[b]) >= t;
    int largest = 0;
    for (GpuMask c : Components(bw, remaining, t)) largest = std::max(largest, std::popcount(c));
    key.push_back(links);
    key.push_back(largest);
  }
  return key;
}

inline bool IsClique(const BandwidthMatrix& bw, GpuMask nodes, double threshold) {
  std::vector<int> list = MaskToList(nodes);
  for (size_t a = 0; a < list.size(); ++a)
    for (size_t b = a + 1; b < list.size(); ++b)
      if (bw.at(list[a], list[b]) < threshold) return false;
  return true;
}

inline DeviceSetChoice MakeChoice(const BandwidthMatrix& bw, GpuMask set, bool exhaustive) {
  DeviceSetChoice c;
  c.gpus = MaskToList(set);
  c.ring_bandwidth_gbps = ReferenceRingBottleneck(bw, c.gpus);
  c.exhaustive = exhaustive;
  return c;
}

inline DeviceSetChoice ReferenceExhaustiveChoice(const BandwidthMatrix& bw, const DeviceSetRequest& req) {
  const std::vector<int> optional = MaskToList(req.available & ~req.must_include);
  const int pick = req.count - std::popcount(req.must_include);
  const std::vector<double> thresholds = Thresholds(bw, MaskToList(req.available));

  GpuMask best_set = 0;
  double best_ring = -1;
  std::vector<int> best_key;
  // Combinations in lexicographic order, so ties keep the lowest indices.
  std::vector<int> idx(static_cast<size_t>(pick));
  std::iota(idx.begin(), idx.end(), 0);
  const int n = static_cast<int>(optional.size());
  while (true) {
    GpuMask set = req.must_include;
    for (int i : idx) set |= GpuMask{1} << optional[static_cast<size_t>(i)];
    std::vector<int> members = MaskToList(set);
    double ring = ReferenceRingBottleneck(bw, members);
    if (ring >= best_ring) {
      std::vector<int> key = FragmentationKey(bw, req.available & ~set, thresholds);
      if (ring > best_ring || key > best_key) {
        best_set = set;
        best_ring = ring;
        best_key = std::move(key);
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

inline double ReferenceRingBottleneck(const BandwidthMatrix& bw, std::span<const int> gpus) {
  const size_t k = gpus.size();
  if (k <= 1) return kInf;
  if (k == 2) return bw.at(gpus[0], gpus[1]);
  if (k <= kExactRingLimit) {
    for (double t : Thresholds(bw, gpus))
      if (HasRingAtLeast(bw, gpus, t)) return t;
    return 0;  // unreachable: the slowest threshold makes the graph complete
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

}  // namespace phalanx::placement::reference
