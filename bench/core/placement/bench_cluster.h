// Synthetic clusters for the placement benchmarks: N NVSwitch nodes of 8 GPUs (one
// pool), 32 nodes per rack, 1,000 per zone; a seeded share of nodes partly or wholly
// allocated so the planners see a realistic mix of free counts.
#pragma once

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/placement/cluster_state.h"

namespace phalanx::placement::bench {

inline std::string Numbered(const char* prefix, long i) {
  std::string s(prefix);
  s += std::to_string(i);
  return s;
}

inline std::vector<std::string> Levels() {
  return {"kubernetes.io/hostname", "phalanx.io/nvlink-domain", "topology.kubernetes.io/rack",
          "topology.kubernetes.io/zone"};
}

inline std::shared_ptr<const BandwidthMatrix> NvSwitch8() {
  auto bw = std::make_shared<BandwidthMatrix>(8);
  for (int i = 0; i < 8; ++i)
    for (int j = i + 1; j < 8; ++j) bw->Set(i, j, 450);
  return bw;
}

// `free_share` of nodes stay empty; the rest get 1..8 GPUs allocated at random.
inline ClusterState MakeCluster(int nodes, double free_share = 0.4, unsigned seed = 7) {
  ClusterState s(Levels());
  std::mt19937 rng(seed);
  auto bw = NvSwitch8();
  for (int i = 0; i < nodes; ++i) {
    NodeSpec spec;
    spec.name = NodeName(Numbered("node-", i));
    spec.pool = "H100";
    spec.gpu_count = 8;
    spec.healthy = AllGpus(8);
    spec.bandwidth = bw;
    spec.domains = {spec.name.str(), "", Numbered("rack-", i / 32), Numbered("zone-", i / 1000)};
    if (!s.AddNode(std::move(spec)).ok()) std::abort();
    if (std::uniform_real_distribution<double>(0, 1)(rng) < free_share) continue;
    const int used = 1 + static_cast<int>(rng() % 8);
    if (!s.Allocate(PodUid(Numbered("pod-", i)), NodeName(Numbered("node-", i)), AllGpus(used), 100).ok()) {
      std::abort();
    }
  }
  return s;
}

}  // namespace phalanx::placement::bench
