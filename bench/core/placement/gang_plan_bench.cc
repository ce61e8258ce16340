// docs/architecture.md §6: gang plan, 256 members x 8 GPUs over 5,000 nodes <= 5 ms.
#include <benchmark/benchmark.h>

#include "bench/core/placement/bench_cluster.h"
#include "core/placement/gang_plan.h"

namespace phalanx::placement {
namespace {

void RunPlan(benchmark::State& state, TopologyMode mode, const std::string& level) {
  const int members = static_cast<int>(state.range(0));
  const ClusterState cluster = bench::MakeCluster(static_cast<int>(state.range(1)));
  GangSpec spec;
  spec.key = GangKey("ml/bench");
  spec.members = members;
  spec.gpus_per_member = 8;
  spec.mode = mode;
  spec.level = level;
  for (auto _ : state) {
    Result<GangPlanResult> r = PlanGang(cluster, spec);
    if (!r.ok() || !r->fits()) {
      state.SkipWithError("gang does not fit");
      break;
    }
    benchmark::DoNotOptimize(r);
  }
}

void BM_GangPlan(benchmark::State& state) { RunPlan(state, TopologyMode::kNone, ""); }
BENCHMARK(BM_GangPlan)->Args({8, 64})->Args({32, 500})->Args({256, 5000})->Unit(benchmark::kMicrosecond);

// One rack (32 nodes) must hold the gang: domain choice from the histograms.
void BM_GangPlanRequiredRack(benchmark::State& state) {
  RunPlan(state, TopologyMode::kRequired, "topology.kubernetes.io/rack");
}
BENCHMARK(BM_GangPlanRequiredRack)->Args({8, 64})->Args({8, 5000})->Unit(benchmark::kMicrosecond);

// Rack preferred, too big for any rack: falls back to a zone.
void BM_GangPlanPreferredRack(benchmark::State& state) {
  RunPlan(state, TopologyMode::kPreferred, "topology.kubernetes.io/rack");
}
BENCHMARK(BM_GangPlanPreferredRack)->Args({256, 5000})->Unit(benchmark::kMicrosecond);

// Admission-loop cycle: plan, reserve, unreserve.
void BM_GangPlanReserve(benchmark::State& state) {
  ClusterState cluster = bench::MakeCluster(static_cast<int>(state.range(1)));
  GangSpec spec;
  spec.key = GangKey("ml/bench");
  spec.members = static_cast<int>(state.range(0));
  spec.gpus_per_member = 8;
  for (auto _ : state) {
    Result<GangPlanResult> r = PlanGang(cluster, spec);
    if (!r.ok() || !r->fits() || !ReservePlan(cluster, *r->plan).ok() || !cluster.Unreserve(spec.key).ok()) {
      state.SkipWithError("plan/reserve failed");
      break;
    }
  }
}
BENCHMARK(BM_GangPlanReserve)->Args({256, 5000})->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace phalanx::placement

BENCHMARK_MAIN();
