// One scheduling-engine pass (core/scheduling/engine.h) with many gangs waiting on a
// 5,000-node cluster: the admission work per extender tick / simulator event.
//
//   BM_PassNothingFits/Q     every GPU held by 2,500 running gangs (known to the engine,
//                            so heads replay their expected ends); Q gangs of mixed
//                            shapes and tiers wait; a full pass tries every one of them.
//   BM_PassArrivalsOnly/Q    the same queue after a pass; one new gang arrives and only it
//                            is tried (nothing was released).
//   BM_PassAdmitsHalf/Q      40 % of the nodes empty: the pass admits what fits (the
//                            state is rebuilt outside the timing each iteration); each
//                            admission is a gang plan over the pool (core/placement).
//   BM_QueuesNothingFits/Q   BM_PassNothingFits with 100 team queues (one cohort, 400 GPUs
//                            nominal each): the running gangs spread over the queues, the
//                            Q waiting gangs too; the walk is by queue share, and gangs
//                            within nominal look for borrowed gangs to reclaim.
//   BM_QueuesAdmitsHalf/Q    BM_PassAdmitsHalf with the same 100 queues.
#include <benchmark/benchmark.h>

#include <fmt/format.h>

#include "bench/core/placement/bench_cluster.h"
#include "core/scheduling/engine.h"

namespace phalanx::scheduling {
namespace {

constexpr int kNodes = 5000;

class BenchDriver : public EngineDriver {
 public:
  explicit BenchDriver(placement::ClusterState state) : state_(std::move(state)) {}
  const placement::ClusterState& state() const override { return state_; }
  std::optional<std::vector<PodUid>> Admit(const GangRequest& g, const Admission& a) override {
    std::vector<PodUid> pods;
    for (size_t m = 0; m < a.members.size(); ++m) {
      PodUid pod(fmt::format("{}-{}", g.key.str(), m));
      if (!state_.Allocate(pod, a.members[m].node, a.members[m].gpus, g.priority).ok()) std::abort();
      pods.push_back(std::move(pod));
    }
    return pods;
  }
  std::optional<double> Evict(const GangKey&, const GangKey&, std::string_view, bool) override { return std::nullopt; }
  double GpuSecondsAtRisk(const GangKey&) const override { return 0; }
  placement::ClusterState& mutable_state() { return state_; }

 private:
  placement::ClusterState state_;
};

constexpr int kQueues = 100;

QueueConfig HundredQueues() {
  QueueConfig c;
  for (int q = 0; q < kQueues; ++q) {
    c.queues.push_back(QueueSpec{.name = fmt::format("team-{}", q), .cohort = "org", .weight = 1.0 + q % 3, .parent = "",
                                 .quotas = {{"H100", kNodes * 8 / kQueues * kMilliGpu, std::nullopt, std::nullopt}}});
  }
  c.default_queue = "team-0";
  return c;
}

GangRequest Waiting(int i) {
  static const int kShapes[][2] = {{1, 1}, {1, 4}, {1, 8}, {2, 8}, {4, 8}, {32, 8}};
  static const int kTiers[] = {100, 1000, 1000, 1000, 10000};
  GangRequest g;
  g.key = GangKey(fmt::format("ns/g{}", i));
  g.pool = "H100";
  g.members = kShapes[i % 6][0];
  g.gpus_per_member = kShapes[i % 6][1];
  g.priority = kTiers[i % 5];
  g.submitted = i;
  g.duration_hint_s = 3600 + 60 * (i % 100);
  return g;
}

// Every node full: 2,500 running gangs of 2 x 8, known to the engine.
void FillCluster(BenchDriver& d, Engine& e) {
  for (int i = 0; i < kNodes / 2; ++i) {
    GangRequest g;
    g.queue = fmt::format("team-{}", (i * 3) % (kQueues / 2));  // half the queues borrow
    g.key = GangKey(fmt::format("ns/run{}", i));
    g.pool = "H100";
    g.members = 2;
    g.gpus_per_member = 8;
    g.priority = 1000;
    g.duration_hint_s = 600 + 7 * i;
    std::vector<PodUid> pods;
    for (int m = 0; m < 2; ++m) {
      PodUid pod(fmt::format("run{}-{}", i, m));
      if (!d.mutable_state().Allocate(pod, NodeName(placement::bench::Numbered("node-", 2 * i + m)),
                                      placement::AllGpus(8), 1000).ok()) {
        std::abort();
      }
      pods.push_back(pod);
    }
    e.AdoptRunning(g, "H100", std::move(pods), 0);
  }
}

void BM_PassNothingFits(benchmark::State& st) {
  BenchDriver d(placement::bench::MakeCluster(kNodes, 1.0));
  Engine e;
  FillCluster(d, e);
  for (int i = 0; i < st.range(0); ++i) (void)e.Enqueue(Waiting(i));
  for (auto _ : st) e.Pass(100, d);
  st.counters["waiting"] = static_cast<double>(e.waiting());
  st.counters["plans/pass"] = static_cast<double>(e.stats().plan_calls) / static_cast<double>(e.stats().passes);
}
BENCHMARK(BM_PassNothingFits)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);

void BM_PassArrivalsOnly(benchmark::State& st) {
  BenchDriver d(placement::bench::MakeCluster(kNodes, 1.0));
  Engine e;
  FillCluster(d, e);
  for (int i = 0; i < st.range(0); ++i) (void)e.Enqueue(Waiting(i));
  e.Pass(100, d);
  int next = static_cast<int>(st.range(0));
  for (auto _ : st) {
    (void)e.Enqueue(Waiting(next++));
    e.Pass(101, d, Engine::Scope::kArrivalsOnly);
  }
}
BENCHMARK(BM_PassArrivalsOnly)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);

void BM_PassAdmitsHalf(benchmark::State& st) {
  const placement::ClusterState base = placement::bench::MakeCluster(kNodes, 0.4);
  int64_t admitted = 0, plans = 0;
  for (auto _ : st) {
    st.PauseTiming();
    BenchDriver d(base);
    Engine e;
    for (int i = 0; i < st.range(0); ++i) (void)e.Enqueue(Waiting(i));
    st.ResumeTiming();
    e.Pass(100, d);
    admitted += static_cast<int64_t>(e.stats().admitted);
    plans += static_cast<int64_t>(e.stats().plan_calls);
  }
  st.counters["admitted/pass"] = static_cast<double>(admitted) / static_cast<double>(st.iterations());
  st.counters["plans/pass"] = static_cast<double>(plans) / static_cast<double>(st.iterations());
}
BENCHMARK(BM_PassAdmitsHalf)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);

GangRequest TeamWaiting(int i) {
  GangRequest g = Waiting(i);
  g.queue = fmt::format("team-{}", (i * 7) % kQueues);
  return g;
}

void BM_QueuesNothingFits(benchmark::State& st) {
  BenchDriver d(placement::bench::MakeCluster(kNodes, 1.0));
  Engine e(EnginePolicy::Defaults(), HundredQueues());
  FillCluster(d, e);
  for (int i = 0; i < st.range(0); ++i) (void)e.Enqueue(TeamWaiting(i));
  for (auto _ : st) e.Pass(100, d);
  st.counters["waiting"] = static_cast<double>(e.waiting());
  st.counters["borrowing"] = static_cast<double>(e.queues().Borrowing().size());
  st.counters["plans/pass"] = static_cast<double>(e.stats().plan_calls) / static_cast<double>(e.stats().passes);
}
BENCHMARK(BM_QueuesNothingFits)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);

void BM_QueuesAdmitsHalf(benchmark::State& st) {
  const placement::ClusterState base = placement::bench::MakeCluster(kNodes, 0.4);
  int64_t admitted = 0, plans = 0;
  for (auto _ : st) {
    st.PauseTiming();
    BenchDriver d(base);
    Engine e(EnginePolicy::Defaults(), HundredQueues());
    for (int i = 0; i < st.range(0); ++i) (void)e.Enqueue(TeamWaiting(i));
    st.ResumeTiming();
    e.Pass(100, d);
    admitted += static_cast<int64_t>(e.stats().admitted);
    plans += static_cast<int64_t>(e.stats().plan_calls);
  }
  st.counters["admitted/pass"] = static_cast<double>(admitted) / static_cast<double>(st.iterations());
  st.counters["plans/pass"] = static_cast<double>(plans) / static_cast<double>(st.iterations());
}
BENCHMARK(BM_QueuesAdmitsHalf)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace phalanx::scheduling
BENCHMARK_MAIN();
