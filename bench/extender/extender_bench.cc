// Server-side time of the extender's hot verbs and of gang admission (docs/architecture.md §6), in
// process, without HTTP: what the verbs' handlers do per request (parse the body with
// simdjson, decide on the ledger, encode the reply into one string).
//   BM_FilterServerTime/N       filter, N candidate names, 5,000-node cluster 50% busy
//   BM_FilterServerTimeNoFit/N  filter where no node fits (6 of 8 GPUs busy everywhere)
//   BM_PrioritizeServerTime/N   prioritize, same cluster as BM_FilterServerTime
//   BM_PrioritizeServerTimeMig/N  prioritize for a 1g.10gb MIG pod, N names, 5,000 A100 nodes
//                               in MIG mode (a100-mig: 11 devices), 3 of 9 1g devices held
//   BM_FilterServerTimeMig/N    filter for the same pod on the same cluster (every node fits)
//   BM_FilterServerTimeMigNoFit/N  filter where every 1g device is held (every node fails)
//   BM_FilterServerTimeMigQueues/N  BM_FilterServerTimeMig with team queues on (a queue with
//                               room on A100; the 15,000 held pods booked in it): the MIG
//                               quota check under the exclusive lock, then the same filter
//   BM_TickMigBooking/changed   with queues on, one Tick (admission pass, nothing waiting) on
//                               that cluster: /1 after one MIG pod changed (every MIG holder
//                               booked again), /0 nothing changed
//   BM_GangAdmission            256 gated members x 8 GPUs over 5,000 nodes: one admission
//                               pass (Tick) that plans, reserves and lifts the gates
//   BM_TickQueued/full          a full cluster (40,000 busy GPUs) and 1,000 gated 2 x 8 gangs
//                               (a fifth of them high tier) that cannot fit: one Tick, which
//                               holds the ledger's exclusive lock; /full after a release (a
//                               full engine pass), /arrivals when nothing was released
//   BM_VerbDuringAdmission/verb/period  filter (0) or prioritize (1) of a 4-GPU pod at 5,000
//                               names on the BM_TickQueued cluster while another thread runs
//                               admission: a node update (so each pass is a full one) and a
//                               Tick every `period` ms (0 = back to back); p99/p999/max of
//                               the verb's wall time, and of the time it was blocked (off CPU
//                               and not runnable: waiting for the ledger lock; from the
//                               thread's schedstat, so time lost to other processes on a
//                               shared machine is not counted)
// Command: build/bench/extender/extender_bench (see bench/RESULTS.md, Extender).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <thread>
#include <string>
#include <vector>

#include "bench/extender/bench_cluster.h"
#include "core/base/clock.h"
#include "core/topology/reference_machines.h"
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

// Wall-clock percentiles of the timed loop (docs/architecture.md §6 states the filter target as a p99); on a
// shared machine they include preemption by other processes.
class Percentiles {
 public:
  void Start() { t0_ = std::chrono::steady_clock::now(); }
  void Stop() { us_.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0_).count()); }
  void Report(benchmark::State& state, bool tail = false) {
    if (us_.empty()) return;
    std::sort(us_.begin(), us_.end());
    state.counters["p50_us"] = us_[us_.size() / 2];
    state.counters["p99_us"] = us_[std::min(us_.size() - 1, us_.size() * 99 / 100)];
    if (tail) {
      state.counters["p999_us"] = us_[std::min(us_.size() - 1, us_.size() * 999 / 1000)];
      state.counters["max_us"] = us_.back();
    }
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

// The no-fit reply alone: 5,000 names refused for one shared reason (what a full cluster
// answers), encoded. Its bytes are what kube-scheduler reads back (issue 23). escaped:1 puts a
// tab in the last name, which sends the whole reply down the appending encoder (the one every
// reply took before the counted one).
void BM_EncodeNoFitReply(benchmark::State& state) {
  static const std::string kReason = "Insufficient nvidia.com/gpu";
  std::vector<std::string> names;
  for (int i = 0; i < state.range(0); ++i) names.push_back(NodeName(i));
  if (state.range(1)) names.back() += '\t';
  FilterResult r;
  for (const std::string& n : names) r.unresolvable.emplace_back(n, FailReason::Static(kReason));
  size_t bytes = 0;
  for (auto _ : state) {
    std::string reply = EncodeFilterResult(r);
    bytes = reply.size();
    benchmark::DoNotOptimize(reply.data());
  }
  state.counters["reply_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_EncodeNoFitReply)->ArgNames({"names", "escaped"})->Args({5000, 0})->Args({5000, 1})->Unit(benchmark::kMicrosecond);

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

// --- MIG ---------------------------------------------------------------------------------

// The a100-mig reference machine (GPU 0 = 7 x 1g.10gb, GPU 1 = 3g.40gb + 2g.20gb + 2 x 1g.10gb,
// GPUs 2-7 whole) with node-unique UUIDs, named like BenchNode.
NodeInfo MigBenchNode(int i) {
  NodeInfo n = BenchNode(i);
  n.labels[std::string(kProductLabel)] = "A100";
  auto topo = topology::MakeA100MigNode();
  for (size_t g = 0; g < topo.gpus.size(); ++g) {
    topo.gpus[g].uuid = GpuUuid(fmt::format("GPU-{}-{}", NodeName(i), g));
    for (size_t k = 0; k < topo.gpus[g].mig_devices.size(); ++k)
      topo.gpus[g].mig_devices[k].uuid = GpuUuid(fmt::format("MIG-{}-{}-{}", NodeName(i), g, k));
  }
  n.topology = std::move(topo);
  n.allocatable_gpus = 6;
  return n;
}

// 5,000 such nodes; `held` running 1g.10gb pods on each (the ledger charges their best fit).
struct MigCluster {
  explicit MigCluster(int held) : ext(DefaultConfig(), RealClock::Instance(), writer, leadership) {
    for (int i = 0; i < kNodes; ++i) (void)ext.OnNode(MigBenchNode(i));
    for (int i = 0; i < kNodes; ++i) {
      for (int h = 0; h < held; ++h) {
        PodInfo p = BenchPod(fmt::format("mig-{}-{}", i, h), 0, NodeName(i));
        p.mig["1g.10gb"] = 1;
        p.mig_container = "main";
        ext.OnPod(p);
      }
    }
  }
  RecordingWriter writer;
  StaticLeadership leadership{true};
  Extender ext;
};

// WorkerPodJson asking for one nvidia.com/mig-1g.10gb instead of whole GPUs.
std::string MigPodJson() {
  std::string pod = WorkerPodJson("infer-0", 1);
  for (size_t at; (at = pod.find("\"nvidia.com/gpu\":\"1\"")) != std::string::npos;)
    pod.replace(at, 20, "\"nvidia.com/mig-1g.10gb\":\"1\"");
  return pod;
}

MigCluster& MigThirdHeld() {
  static MigCluster* c = new MigCluster(3);
  return *c;
}

void BM_PrioritizeServerTimeMig(benchmark::State& state) {
  MigCluster& c = MigThirdHeld();
  const std::string body = FilterBody(MigPodJson(), static_cast<int>(state.range(0)));
  json::FastJsonParser parser;
  int nonzero = 0;
  Percentiles pct;
  for (auto _ : state) {
    pct.Start();
    auto args = ParseFilterArgs(body, parser);
    if (!args.ok() || args->pod.mig.empty()) {
      state.SkipWithError("the MIG pod did not parse as one");
      return;
    }
    const std::vector<HostScore> scores = c.ext.Prioritize(*args);
    std::string reply = EncodeHostPriorities(scores);
    nonzero = static_cast<int>(std::count_if(scores.begin(), scores.end(), [](const HostScore& h) { return h.score > 0; }));
    benchmark::DoNotOptimize(reply.data());
    pct.Stop();
  }
  pct.Report(state);
  state.counters["scored"] = nonzero;
}
BENCHMARK(BM_PrioritizeServerTimeMig)->Arg(500)->Arg(5000)->Unit(benchmark::kMicrosecond);

void MigFilter(benchmark::State& state, MigCluster& c) {
  const std::string body = FilterBody(MigPodJson(), static_cast<int>(state.range(0)));
  json::FastJsonParser parser;
  size_t passed = 0, failed = 0;
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
    failed = r.failed.size() + r.unresolvable.size();
    benchmark::DoNotOptimize(reply.data());
    pct.Stop();
  }
  pct.Report(state);
  state.counters["passed"] = static_cast<double>(passed);
  state.counters["failed"] = static_cast<double>(failed);
}

void BM_FilterServerTimeMig(benchmark::State& state) { MigFilter(state, MigThirdHeld()); }
BENCHMARK(BM_FilterServerTimeMig)->Arg(5000)->Unit(benchmark::kMicrosecond);

void BM_FilterServerTimeMigNoFit(benchmark::State& state) {
  static MigCluster* c = new MigCluster(9);  // every 1g.10gb device held
  MigFilter(state, *c);
}
BENCHMARK(BM_FilterServerTimeMigNoFit)->Arg(5000)->Unit(benchmark::kMicrosecond);

// MigThirdHeld's cluster with team queues: one queue, the default, with room on A100 for
// everything; a first Tick books the 15,000 MIG pods in it.
MigCluster& MigThirdHeldWithQueues() {
  static MigCluster* c = [] {
    auto* m = new MigCluster(3);
    QueueAssignment q;
    scheduling::QueueSpec all;
    all.name = "all";
    all.quotas.push_back({.pool = "A100", .nominal = 1000000 * scheduling::kMilliGpu, .borrowing_limit = std::nullopt,
                          .lending_limit = std::nullopt});
    q.config.queues.push_back(all);
    q.config.default_queue = "all";
    if (!m->ext.SetQueues(q).ok()) std::abort();
    m->ext.Tick();
    return m;
  }();
  return *c;
}

void BM_FilterServerTimeMigQueues(benchmark::State& state) { MigFilter(state, MigThirdHeldWithQueues()); }
BENCHMARK(BM_FilterServerTimeMigQueues)->Arg(5000)->Unit(benchmark::kMicrosecond);

void BM_TickMigBooking(benchmark::State& state) {
  MigCluster& c = MigThirdHeldWithQueues();
  PodInfo p = BenchPod("mig-0-0", 0, NodeName(0));
  p.mig["1g.10gb"] = 1;
  p.mig_container = "main";
  Percentiles pct;
  for (auto _ : state) {
    state.PauseTiming();
    if (state.range(0) == 1) c.ext.OnPod(p);  // the same pod again: released and charged anew
    state.ResumeTiming();
    pct.Start();
    c.ext.Tick();
    pct.Stop();
  }
  pct.Report(state);
}
BENCHMARK(BM_TickMigBooking)->Arg(0)->Arg(1)->ArgName("changed")->Unit(benchmark::kMicrosecond);

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

// Every GPU held (8 one-GPU pods per node) and 1,000 gated 2 x 8 gangs queued (a fifth high).
void QueueGangs(Cluster& c) {
  for (int g = 0; g < 1000; ++g) {
    const std::string name = fmt::format("queued-{}", g);
    for (int m = 0; m < 2; ++m) {
      PodInfo p = BenchPod(fmt::format("{}-{}", name, m), 8);
      p.gang = name;
      p.min_members = 2;
      p.gated = true;
      p.priority = g % 5 == 0 ? 10000 : 1000;
      c.ext.OnPod(p);
    }
  }
  c.ext.Tick();  // queue them
}

void BM_TickQueued(benchmark::State& state) {
  const bool full = state.range(0) == 1;
  Cluster c(8);
  QueueGangs(c);
  Percentiles pct;
  for (auto _ : state) {
    if (full) {
      state.PauseTiming();
      (void)c.ext.OnNode(BenchNode(0));  // a node update: something may have come free
      state.ResumeTiming();
    }
    pct.Start();
    c.ext.Tick();
    pct.Stop();
  }
  pct.Report(state);
  if (c.ext.stats().gangs_admitted.load() != 0) state.SkipWithError("a gang was admitted on a full cluster");
}
BENCHMARK(BM_TickQueued)->ArgName("full")->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);

// This thread's time on CPU (CLOCK_THREAD_CPUTIME_ID) plus its time waiting runnable for a
// CPU (run_delay, the second field of /proc/thread-self/schedstat), in ns: what is left of
// a wall-clock interval is the time it was blocked.
struct SchedStat {
  SchedStat() : fd_(::open("/proc/thread-self/schedstat", O_RDONLY)) {}
  ~SchedStat() {
    if (fd_ >= 0) ::close(fd_);
  }
  double OnCpuOrRunnableNs() const {
    timespec cpu{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
    double ns = static_cast<double>(cpu.tv_sec) * 1e9 + static_cast<double>(cpu.tv_nsec);
    char buf[128];
    const ssize_t n = fd_ < 0 ? -1 : ::pread(fd_, buf, sizeof(buf) - 1, 0);
    if (n <= 0) return ns;
    buf[n] = '\0';
    char* end = nullptr;
    (void)std::strtod(buf, &end);  // on-CPU time, as the clock above but coarser
    return ns + std::strtod(end, nullptr);
  }

 private:
  int fd_;
};

// Filter/prioritize latency while admission runs on another thread (issue 15 item 3): the
// verbs take the ledger lock shared; whatever admission holds exclusively, they wait for.
void BM_VerbDuringAdmission(benchmark::State& state) {
  const bool prioritize = state.range(0) == 1;
  const auto period = std::chrono::milliseconds(state.range(1));
  static Cluster* c = [] {
    auto* cluster = new Cluster(8);
    QueueGangs(*cluster);
    return cluster;
  }();
  const std::string body = FilterBody(WorkerPodJson("worker-0", 4), kNodes);
  json::FastJsonParser parser;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> ticks{0};
  std::thread admission([&] {
    while (!stop.load()) {
      (void)c->ext.OnNode(BenchNode(0));  // something may have come free: a full pass
      c->ext.Tick();
      ticks++;
      if (period.count() > 0) std::this_thread::sleep_for(period);
    }
  });
  Percentiles pct;
  SchedStat sched;
  std::vector<double> blocked_us;
  for (auto _ : state) {
    const double ran0 = sched.OnCpuOrRunnableNs();
    const auto t0 = std::chrono::steady_clock::now();
    pct.Start();
    auto args = ParseFilterArgs(body, parser);
    if (!args.ok()) {
      state.SkipWithError(std::string(args.status().message()).c_str());
      break;
    }
    if (prioritize) {
      std::string reply = EncodeHostPriorities(c->ext.Prioritize(*args));
      benchmark::DoNotOptimize(reply.data());
    } else {
      std::string reply = EncodeFilterResult(c->ext.Filter(*args));
      benchmark::DoNotOptimize(reply.data());
    }
    pct.Stop();
    const double wall_ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    blocked_us.push_back(std::max(0.0, wall_ns - (sched.OnCpuOrRunnableNs() - ran0)) / 1e3);
  }
  stop.store(true);
  admission.join();
  pct.Report(state, true);
  if (!blocked_us.empty()) {
    std::sort(blocked_us.begin(), blocked_us.end());
    double total = 0;
    for (double b : blocked_us) total += b;
    state.counters["blocked_p99_us"] = blocked_us[std::min(blocked_us.size() - 1, blocked_us.size() * 99 / 100)];
    state.counters["blocked_max_us"] = blocked_us.back();
    state.counters["blocked_mean_us"] = total / static_cast<double>(blocked_us.size());
  }
  state.counters["ticks"] = static_cast<double>(ticks.load());
  if (c->ext.stats().gangs_admitted.load() != 0) state.SkipWithError("a gang was admitted on a full cluster");
}
BENCHMARK(BM_VerbDuringAdmission)
    ->ArgNames({"prioritize", "period_ms"})
    ->Args({0, 100})
    ->Args({0, 0})
    ->Args({1, 100})
    ->Args({1, 0})
    ->MinTime(3)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace phalanx::extender::bench

BENCHMARK_MAIN();
