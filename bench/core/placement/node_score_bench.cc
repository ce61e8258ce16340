// Node score and cluster-wide queries on 5,000 nodes.
#include <benchmark/benchmark.h>

#include <fmt/format.h>

#include "bench/core/placement/bench_cluster.h"
#include "core/placement/fragmentation.h"
#include "core/placement/node_score.h"

namespace phalanx::placement {
namespace {

// One prioritize call per node, as the extender answers kube-scheduler.
void BM_ScoreNodes(benchmark::State& state) {
  const ClusterState cluster = bench::MakeCluster(static_cast<int>(state.range(0)));
  PodRequest req;
  req.gpus = 2;
  for (auto _ : state) {
    int scored = 0;
    for (NodeIndex i : cluster.Nodes()) {
      Result<NodeScore> s = ScoreNode(cluster, i, req);
      scored += s.ok();
    }
    benchmark::DoNotOptimize(scored);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_ScoreNodes)->Arg(500)->Arg(5000)->Unit(benchmark::kMicrosecond);

void BM_FeasibilityNodes(benchmark::State& state) {
  const ClusterState cluster = bench::MakeCluster(static_cast<int>(state.range(0)));
  PodRequest req;
  req.gpus = 4;
  req.priority = 1000;
  for (auto _ : state) {
    int fits = 0;
    for (NodeIndex i : cluster.Nodes()) fits += CheckFeasibility(cluster, i, req).fits();
    benchmark::DoNotOptimize(fits);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_FeasibilityNodes)->Arg(5000)->Unit(benchmark::kMicrosecond);

// A full cluster, as the extender's filter sees it when nothing fits: 6 of 8 GPUs busy on
// every node, one 1-GPU pod each, alternately of priority 0 and 100. A 4-GPU request of
// priority `range(1)` fits nowhere; each node's reason needs its lower-tier GPUs (0: none
// are lower; 50: three are; 1000: all six).
void BM_FeasibilityFullCluster(benchmark::State& state) {
  ClusterState cluster(bench::Levels());
  const int nodes = static_cast<int>(state.range(0));
  const auto bandwidth = bench::NvSwitch8();  // one matrix shared by every node, as the ledger does
  for (int n = 0; n < nodes; ++n) {
    NodeSpec spec;
    spec.name = NodeName(bench::Numbered("node-", n));
    spec.gpu_count = 8;
    spec.healthy = AllGpus(8);
    spec.bandwidth = bandwidth;
    spec.domains = {spec.name.str(), "", bench::Numbered("rack-", n / 32), "zone-0"};
    (void)cluster.AddNode(spec);
    for (int g = 0; g < 6; ++g) {
      (void)cluster.Allocate(PodUid(fmt::format("pod-{}-{}", n, g)), spec.name, GpuMask{1} << g, g % 2 ? 100 : 0);
    }
  }
  PodRequest req;
  req.gpus = 4;
  req.priority = static_cast<int>(state.range(1));
  for (auto _ : state) {
    int lower = 0;
    for (NodeIndex i : cluster.Nodes()) lower += CheckFeasibility(cluster, i, req).resolvable_by_preemption();
    benchmark::DoNotOptimize(lower);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_FeasibilityFullCluster)
    ->Args({5000, 0})
    ->Args({5000, 50})
    ->Args({5000, 1000})
    ->Unit(benchmark::kMicrosecond);

// The simulator's per-pod decision for non-gang pods.
void BM_PickBestNode(benchmark::State& state) {
  const ClusterState cluster = bench::MakeCluster(static_cast<int>(state.range(0)));
  PodRequest req;
  req.gpus = 2;
  for (auto _ : state) benchmark::DoNotOptimize(PickBestNode(cluster, req));
}
BENCHMARK(BM_PickBestNode)->Arg(5000)->Unit(benchmark::kMicrosecond);

void BM_ClusterFragmentation(benchmark::State& state) {
  const ClusterState cluster = bench::MakeCluster(static_cast<int>(state.range(0)));
  const std::vector<TaskShape> mix = {{1, 500, 3}, {1, 1000, 4}, {2, 1000, 1}, {8, 1000, 2}};
  for (auto _ : state) benchmark::DoNotOptimize(ClusterFragmentation(cluster, mix));
}
BENCHMARK(BM_ClusterFragmentation)->Arg(5000)->Unit(benchmark::kMicrosecond);

// Ledger churn: one allocate + release on a 5,000-node state (all indexes updated).
void BM_AllocateRelease(benchmark::State& state) {
  ClusterState cluster = bench::MakeCluster(static_cast<int>(state.range(0)));
  const PodUid pod("bench-pod");
  const NodeName node("node-1");
  const GpuMask gpu = cluster.node(*cluster.FindNode(node)).free & (~cluster.node(*cluster.FindNode(node)).free + 1);
  for (auto _ : state) {
    if (!cluster.Allocate(pod, node, gpu).ok() || !cluster.Release(pod).ok()) {
      state.SkipWithError("allocate/release failed");
      break;
    }
  }
}
BENCHMARK(BM_AllocateRelease)->Arg(5000);

}  // namespace
}  // namespace phalanx::placement

BENCHMARK_MAIN();
