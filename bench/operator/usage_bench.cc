// Usage accounting on the reconcile path (issue 18): what status.usage adds to one reconcile of a
// running TrainingJob, and how many status writes a running job makes per hour.
//   BM_Reconcile/<replicas>      the whole pure Reconcile() of a Running gang (usage included)
//   BM_AccountUsage/<replicas>   the usage step alone (AccountUsage over the job's pods)
//   BM_StatusCompare/<replicas>  the extra EncodeStatus comparison usage needs ("would the reconcile
//                                write anyway?")
//   BM_ReconcileSweep/<jobs>     one reconcile of each of <jobs> running 8-pod jobs (a re-list)
//   BM_WritesPerHour/<replicas>  reconciles every 5 s for an hour of a Running gang: status writes
//                                (counter), with usage riding on the 30 s preemption-cost refresh
#include <benchmark/benchmark.h>

#include "operator/api/keys.h"
#include "operator/api/time_format.h"
#include "operator/api/training_job_codec.h"
#include "operator/cost/usage.h"
#include "operator/reconcile/reconcile.h"

namespace phalanx::op {
namespace {

using json::Json;
using std::chrono::seconds;

const SystemTime kT0 = SystemTime(seconds(1'795'000'000));

PriceTable Prices() {
  PriceTable t;
  t.currency = "USD";
  t.gpu_hourly["NVIDIA-H100-80GB-HBM3"] = 2.5;
  t.default_gpu_hourly = 2;
  t.tier_multiplier = {{"critical", 1}, {"high", 1}, {"standard", 1}, {"spot", 0.4}};
  return t;
}

struct RunningJob {
  TrainingJob job;
  std::vector<ObservedPod> pods;
};

// A gang that has run for an hour, its status as the operator last wrote it, one pod in ten idle.
RunningJob MakeRunningJob(int index, int replicas, const PriceTable& prices, const ReconcileOptions& options) {
  Json j = {{"apiVersion", "phalanx.io/v1alpha1"},
            {"kind", "TrainingJob"},
            {"metadata", {{"name", "job-" + std::to_string(index)}, {"namespace", "bench"}, {"uid", "u"},
                          {"generation", 1}, {"resourceVersion", "1"}}},
            {"spec",
             {{"replicas", replicas},
              {"gpusPerReplica", 8},
              {"scheduling", {{"priorityClassName", "phalanx-standard"}}},
              {"checkpoint", {{"dir", "/ckpt"}}},
              {"template", {{"spec", {{"containers", Json::array({Json{{"name", "t"}, {"image", "t:1"}}})}}}}}}}};
  RunningJob r;
  auto decoded = DecodeTrainingJob(j);
  if (!decoded.ok()) std::abort();
  r.job = std::move(decoded).value();
  // First reconcile creates the gang; the pods then run.
  ReconcilePlan plan = Reconcile(r.job, {}, false, kT0, options);
  r.job.status = *plan.status;
  for (const auto& p : plan.create_pods) {
    ObservedPod pod = *DecodeObservedPod(p);
    pod.uid = "uid-" + pod.name;
    pod.gated = false;
    pod.phase = "Running";
    pod.node_name = "node-" + std::to_string(pod.index);
    pod.start_time = kT0 + seconds(5);
    pod.gpu_product = "NVIDIA-H100-80GB-HBM3";
    pod.containers = {ObservedContainer{"t", true, false, 0, "", "", std::nullopt}};
    if (pod.index % 10 == 3) pod.annotations[std::string(kAnnotationIdleSince)] = FormatRfc3339(kT0 + seconds(600));
    r.pods.push_back(std::move(pod));
  }
  SystemTime now = kT0 + seconds(10);
  for (int i = 0; i < 3; ++i, now += seconds(1800)) {
    plan = Reconcile(r.job, r.pods, true, now, options);
    if (plan.status) r.job.status = *plan.status;
  }
  (void)prices;
  return r;
}

ReconcileOptions Options(const PriceTable& prices) {
  ReconcileOptions o;
  o.prices = &prices;
  return o;
}

void BM_Reconcile(benchmark::State& state) {
  const PriceTable prices = Prices();
  const ReconcileOptions options = Options(prices);
  RunningJob r = MakeRunningJob(0, static_cast<int>(state.range(0)), prices, options);
  const SystemTime now = r.job.status.usage->accounted_until + seconds(10);  // nothing due: no write
  for (auto _ : state) benchmark::DoNotOptimize(Reconcile(r.job, r.pods, true, now, options));
}
BENCHMARK(BM_Reconcile)->Arg(8)->Arg(64)->Arg(512)->Unit(benchmark::kMicrosecond);

void BM_AccountUsage(benchmark::State& state) {
  const PriceTable prices = Prices();
  const ReconcileOptions options = Options(prices);
  RunningJob r = MakeRunningJob(0, static_cast<int>(state.range(0)), prices, options);
  const SystemTime now = r.job.status.usage->accounted_until + seconds(10);
  for (auto _ : state) {
    benchmark::DoNotOptimize(AccountUsage(r.job.status.usage, r.pods, "phalanx-standard", &prices, now));
  }
}
BENCHMARK(BM_AccountUsage)->Arg(8)->Arg(64)->Arg(512)->Unit(benchmark::kMicrosecond);

void BM_StatusCompare(benchmark::State& state) {
  const PriceTable prices = Prices();
  const ReconcileOptions options = Options(prices);
  RunningJob r = MakeRunningJob(0, static_cast<int>(state.range(0)), prices, options);
  TrainingJobStatus copy = r.job.status;
  for (auto _ : state) benchmark::DoNotOptimize(EncodeStatus(copy) != EncodeStatus(r.job.status));
}
BENCHMARK(BM_StatusCompare)->Arg(8)->Arg(64)->Arg(512)->Unit(benchmark::kMicrosecond);

void BM_ReconcileSweep(benchmark::State& state) {
  const PriceTable prices = Prices();
  const ReconcileOptions options = Options(prices);
  std::vector<RunningJob> jobs;
  for (int i = 0; i < state.range(0); ++i) jobs.push_back(MakeRunningJob(i, 8, prices, options));
  const SystemTime now = jobs[0].job.status.usage->accounted_until + seconds(10);
  for (auto _ : state) {
    for (const RunningJob& r : jobs) benchmark::DoNotOptimize(Reconcile(r.job, r.pods, true, now, options));
  }
  state.counters["jobs"] = static_cast<double>(state.range(0));
}
BENCHMARK(BM_ReconcileSweep)->Arg(1000)->Unit(benchmark::kMillisecond);

void BM_WritesPerHour(benchmark::State& state) {
  const PriceTable prices = Prices();
  const ReconcileOptions options = Options(prices);
  double writes = 0, usage_only = 0;
  for (auto _ : state) {
    RunningJob r = MakeRunningJob(0, static_cast<int>(state.range(0)), prices, options);
    SystemTime now = r.job.status.usage->accounted_until;
    writes = usage_only = 0;
    for (int i = 0; i < 720; ++i) {
      now += seconds(5);
      ReconcilePlan plan = Reconcile(r.job, r.pods, true, now, options);
      if (!plan.status) continue;
      ++writes;
      TrainingJobStatus without_usage = *plan.status;
      without_usage.usage = r.job.status.usage;
      if (EncodeStatus(without_usage) == EncodeStatus(r.job.status)) ++usage_only;  // a write only usage caused
      r.job.status = *plan.status;
    }
  }
  state.counters["writes_per_hour"] = writes;
  state.counters["usage_only_writes"] = usage_only;
}
BENCHMARK(BM_WritesPerHour)->Arg(8)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace phalanx::op

BENCHMARK_MAIN();
