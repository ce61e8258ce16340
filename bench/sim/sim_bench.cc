// phalanx simulate throughput (docs/architecture.md §6): scheduling events per minute on a synthetic
// million-event workload, and the wall time of a full Philly replay (82k jobs) when the
// shared traces are present. Run: build-*/bench/sim/sim_bench (Release).
#include <cstdlib>
#include <filesystem>

#include <benchmark/benchmark.h>

#include "sim/engine/run.h"
#include "sim/trace/readers.h"
#include "sim/trace/synthetic.h"

namespace phalanx::sim {
namespace {

ClusterSpec SyntheticCluster(int nodes) {
  ClusterSpec spec;
  spec.name = "bench";
  spec.groups.push_back(NodeGroup{.name = "n", .count = nodes, .gpu_model = "H100", .gpus_per_node = 8,
                                  .nodes_per_rack = 16, .racks_per_block = 8});
  return spec;
}

void RunOne(benchmark::State& state, const ClusterSpec& cluster, const Workload& w, const std::string& policy) {
  uint64_t events = 0;
  double wall = 0;
  for (auto _ : state) {
    RunOptions opts;
    opts.policies = {policy};
    auto report = RunSimulation(cluster, w, opts);
    if (!report.ok()) {
      state.SkipWithError(report.status().ToString().c_str());
      return;
    }
    events += report->policies[0].events;
    wall += report->policies[0].wall_seconds;
    state.counters["completed"] = report->policies[0].completed;
  }
  state.counters["events"] = static_cast<double>(events) / static_cast<double>(state.iterations());
  state.counters["events_per_min"] = wall > 0 ? static_cast<double>(events) / wall * 60 : 0;
}

// ~1,000,000 events: 330k jobs (submit + start + finish each) on 256 x 8 GPUs at 90% load.
void BM_SyntheticMillionEvents(benchmark::State& state, const std::string& policy) {
  static const Workload w = GenerateSynthetic({.jobs = 330000, .seed = 7, .cluster_gpus = 2048, .load = 0.9,
                                               .mean_duration_s = 3600, .max_gang_members = 8});
  RunOne(state, SyntheticCluster(256), w, policy);
}

std::filesystem::path SharedDir() {
  if (const char* env = std::getenv("PHALANX_SHARED_DIR")) return env;
  return std::filesystem::path(PHALANX_SOURCE_DIR) / ".." / "shared";
}

// The Philly cluster (sim/data/philly-cluster.yaml: 321 x 2 + 231 x 8 GPUs, one pool).
ClusterSpec PhillyCluster() {
  static const Result<ClusterSpec> spec = LoadClusterSpec(std::string(PHALANX_SOURCE_DIR) + "/sim/data/philly-cluster.yaml");
  return *spec;
}

void BM_PhillyFullReplay(benchmark::State& state, const std::string& policy) {
  const auto path = SharedDir() / "traces/philly-pollux-derived/philly.csv";
  if (!std::filesystem::exists(path)) {
    state.SkipWithError(("shared traces absent: " + path.string() + " (set PHALANX_SHARED_DIR)").c_str());
    for (auto _ : state) {
    }
    return;
  }
  static const Result<Workload> w = ReadPhillyCsv(path.string(), {.seed = 1});
  if (!w.ok()) {
    state.SkipWithError(w.status().ToString().c_str());
    for (auto _ : state) {
    }
    return;
  }
  RunOne(state, PhillyCluster(), *w, policy);
}

}  // namespace

// Benchmark names are identifiers; the policy is passed as a string.
BENCHMARK_CAPTURE(BM_SyntheticMillionEvents, phalanx, std::string("phalanx"))->Iterations(1)->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_SyntheticMillionEvents, k8s_default, std::string("k8s-default"))->Iterations(1)->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_SyntheticMillionEvents, gang_fifo, std::string("gang-fifo"))->Iterations(1)->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_SyntheticMillionEvents, gang_binpack, std::string("gang-binpack"))->Iterations(1)->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_PhillyFullReplay, phalanx, std::string("phalanx"))->Iterations(1)->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_PhillyFullReplay, k8s_default, std::string("k8s-default"))->Iterations(1)->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_PhillyFullReplay, gang_fifo, std::string("gang-fifo"))->Iterations(1)->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_PhillyFullReplay, gang_binpack, std::string("gang-binpack"))->Iterations(1)->Unit(benchmark::kSecond);

}  // namespace phalanx::sim

BENCHMARK_MAIN();
