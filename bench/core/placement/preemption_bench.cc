// Preemption choice on 5,000 fully used nodes (bound documented in preemption.h).
#include <deque>
#include <random>

#include <benchmark/benchmark.h>

#include "bench/core/placement/bench_cluster.h"
#include "core/placement/preemption.h"

namespace phalanx::placement {
namespace {

// Every node busy: victim gangs of 8 whole nodes each, seeded priorities and risks.
struct Busy {
  ClusterState cluster;
  std::vector<VictimGang> victims;
  std::deque<std::vector<PodUid>> pods;  // what the victims' pods (views) name
};

Busy MakeBusy(int nodes) {
  Busy b{bench::MakeCluster(nodes, /*free_share=*/1.0), {}, {}};
  std::mt19937 rng(11);
  const int tiers[] = {100, 1000, 10000};
  for (int first = 0; first < nodes; first += 8) {
    VictimGang v;
    v.key = GangKey(bench::Numbered("ml/victim-", first / 8));
    v.priority = tiers[rng() % 3];
    v.gpu_seconds_at_risk = static_cast<double>(rng() % 100000);
    std::vector<PodUid>& pods = b.pods.emplace_back();
    for (int i = first; i < std::min(first + 8, nodes); ++i) {
      PodUid pod(bench::Numbered("victim-pod-", i));
      if (!b.cluster.Allocate(pod, NodeName(bench::Numbered("node-", i)), AllGpus(8), v.priority).ok()) std::abort();
      pods.push_back(pod);
    }
    v.pods = pods;
    b.victims.push_back(std::move(v));
  }
  return b;
}

void Run(benchmark::State& state, TopologyMode mode) {
  const Busy busy = MakeBusy(static_cast<int>(state.range(1)));
  PreemptionRequest req;
  req.preemptor.key = GangKey("ml/preemptor");
  req.preemptor.members = static_cast<int>(state.range(0));
  req.preemptor.gpus_per_member = 8;
  req.preemptor.mode = mode;
  req.preemptor.level = "topology.kubernetes.io/rack";
  req.priority = 100000;
  req.candidates = busy.victims;
  for (auto _ : state) {
    Result<PreemptionResult> r = ChoosePreemption(busy.cluster, req);
    if (!r.ok() || !r->helps()) {
      state.SkipWithError("no victim set");
      break;
    }
    benchmark::DoNotOptimize(r);
  }
}

void BM_Preemption(benchmark::State& state) { Run(state, TopologyMode::kNone); }
BENCHMARK(BM_Preemption)->Args({1, 5000})->Args({32, 5000})->Args({256, 5000})->Unit(benchmark::kMillisecond);

// 157 racks to search, each with its own victim set.
void BM_PreemptionRequiredRack(benchmark::State& state) { Run(state, TopologyMode::kRequired); }
BENCHMARK(BM_PreemptionRequiredRack)->Args({16, 5000})->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace phalanx::placement

BENCHMARK_MAIN();
