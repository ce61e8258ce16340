// Server-side time of the extender's hot verbs and of gang admission (DESIGN §6), in
// process, without HTTP: what the verbs' handlers do per request (parse the body with
// simdjson, decide on the ledger, encode the reply into one string).
//   BM_FilterServerTime/N       filter, N candidate names, 5,000-node cluster 50% busy
//   BM_FilterServerTimeNoFit/N  filter where no node fits (6 of 8 GPUs busy everywhere)
//   BM_PrioritizeServerTime/N   prioritize, same cluster as BM_FilterServerTime
//   BM_GangAdmission            256 gated members x 8 GPUs over 5,000 nodes: one admission
//                               pass (Tick) that plans, reserves and lifts the gates
// Command: build/bench/extender/extender_bench (see bench/RESULTS.md, Extender).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "bench/extender/bench_cluster.h"
#include "core/base/clock.h"
#include "extender/extender.h"

namespace phalanx::extender::bench {
namespace {

constexpr int kNodes = 5000;

// A 5,000-node ledger; `busy` GPUs in use on every node (1-GPU pods).
struct Cluster {
  explicit Cluster(int busy_per_node) : ext(DefaultConfig(), RealClock::Instance(), writer, leadership) {
    for (int i = 0; i < kNodes; ++i) (void)ext.OnNode(BenchNode(i));
    for (int i = 0; i < kNodes; ++i) {
      for (int b = 0; b < busy_per_node; ++b) ext.OnPod(BenchPod(fmt::format("busy-{}-{}", i, b), 1, NodeName(i)));
    }
  }
  RecordingWriter writer;
  StaticLeadership leadership{true};
  Extender ext;
};

// Wall-clock percentiles of the timed loop (DESIGN §6 states the filter target as a p99); on a
// shared machine they include preemption by other processes.
class Percentiles {
 public:
  void Start() { t0_ = std::chrono::steady_clock::now(); }
  void Stop() { us_.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0_).count()); }
  void Report(benchmark::State& state) {
    if (us_.empty()) return;
    std::sort(us_.begin(), us_.end());
    state.counters["p50_us"] = us_[us_.size() / 2];
    state.counters["p99_us"] = us_[std::min(us_.size() - 1, us_.size() * 99 / 100)];
  }

 private:
  std::chrono::steady_clock::time_point t0_;
  std::vector<double> us_;
};

Cluster& HalfBusy() {
  static Cluster* c = new Cluster(4);
  return *c;
}

void BM_FilterServerTime(benchmark::State& state) {
  Cluster& c = HalfBusy();
  const std::string body = FilterBody(WorkerPodJson("worker-0", 4), static_cast<int>(state.range(0)));
  json::FastJsonParser parser;
  size_t passed = 0, bytes = 0;
  Percentiles pct;
  for (auto _ : state) {
    pct.Start();
    auto args = ParseFilterArgs(body, parser);
    if (!args.ok()) {
      state.SkipWithError(std::string(args.status().message()).c_str());
      return;
    }
    FilterResult r = c.ext.Filter(*args);
    std::string reply = EncodeFilterResult(r);
    passed = r.passed.size();
    bytes = reply.size();
    benchmark::DoNotOptimize(reply.data());
    pct.Stop();
  }
  pct.Report(state);
  state.counters["passed"] = static_cast<double>(passed);
  state.counters["req_bytes"] = static_cast<double>(body.size());
  state.counters["reply_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_FilterServerTime)->Arg(500)->Arg(5000)->Unit(benchmark::kMicrosecond);

// The busy case: 6 of 8 GPUs in use on every node and a 4-GPU pod, so every node fails with a
// reason (the reply is the FailedNodes map).
void BM_FilterServerTimeNoFit(benchmark::State& state) {
  static Cluster* c = new Cluster(6);
  const std::string body = FilterBody(WorkerPodJson("worker-0", 4), static_cast<int>(state.range(0)));
  json::FastJsonParser parser;
  size_t failed = 0;
  Percentiles pct;
  for (auto _ : state) {
    pct.Start();
    auto args = ParseFilterArgs(body, parser);
    if (!args.ok()) {
      state.SkipWithError(std::string(args.status().message()).c_str());
      return;
    }
    FilterResult r = c->ext.Filter(*args);
    std::string reply = EncodeFilterResult(r);
    failed = r.failed.size() + r.unresolvable.size();
    benchmark::DoNotOptimize(reply.data());
    pct.Stop();
  }
  pct.Report(state);
  state.counters["failed"] = static_cast<double>(failed);
}
BENCHMARK(BM_FilterServerTimeNoFit)->Arg(500)->Arg(5000)->Unit(benchmark::kMicrosecond);

void BM_PrioritizeServerTime(benchmark::State& state) {
  Cluster& c = HalfBusy();
  const std::string body = FilterBody(WorkerPodJson("worker-0", 4), static_cast<int>(state.range(0)));
  json::FastJsonParser parser;
  size_t bytes = 0;
  Percentiles pct;
  for (auto _ : state) {
    pct.Start();
    auto args = ParseFilterArgs(body, parser);
    if (!args.ok()) {
      state.SkipWithError(std::string(args.status().message()).c_str());
      return;
    }
    std::string reply = EncodeHostPriorities(c.ext.Prioritize(*args));
    bytes = reply.size();
    benchmark::DoNotOptimize(reply.data());
    pct.Stop();
  }
  pct.Report(state);
  state.counters["reply_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_PrioritizeServerTime)->Arg(500)->Arg(5000)->Unit(benchmark::kMicrosecond);

// One admission pass for a 256 x 8-GPU gang on an empty 5,000-node cluster. Each plan
// reserves 2,048 of the 40,000 GPUs, so the ledger is rebuilt every 15 gangs (untimed).
void BM_GangAdmission(benchmark::State& state) {
  constexpr int kMembers = 256, kGangsPerLedger = 15;
  std::unique_ptr<Cluster> c;
  int gang = 0;
  for (auto _ : state) {
    state.PauseTiming();
    if (!c || gang % kGangsPerLedger == 0) c = std::make_unique<Cluster>(0);
    const std::string name = fmt::format("gang-{}", gang++);
    for (int m = 0; m < kMembers; ++m) {
      PodInfo p = BenchPod(fmt::format("{}-{}", name, m), 8);
      p.gang = name;
      p.min_members = kMembers;
      p.gated = true;
      c->ext.OnPod(p);
    }
    const uint64_t before = c->ext.stats().gangs_admitted.load();
    state.ResumeTiming();
    c->ext.Tick();
    state.PauseTiming();
    if (c->ext.stats().gangs_admitted.load() != before + 1) {
      state.SkipWithError("the gang was not admitted");
      return;
    }
    state.ResumeTiming();
  }
}
BENCHMARK(BM_GangAdmission)->Unit(benchmark::kMillisecond)->Iterations(30);

}  // namespace
}  // namespace phalanx::extender::bench

BENCHMARK_MAIN();
