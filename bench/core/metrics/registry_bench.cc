// Hot-path cost of metric updates on cached children, and scrape cost by registry size.
#include <string>

#include <benchmark/benchmark.h>

#include "core/metrics/buckets.h"
#include "core/metrics/registry.h"

namespace phalanx::metrics {
namespace {

void BM_CounterInc(benchmark::State& state) {
  static Registry* registry = new Registry();
  static Counter* counter =
      *(*registry->AddCounter("bench_requests_total", "R.", {"verb", "result"}))
           ->WithLabels({"filter", "ok"});
  for (auto _ : state) counter->Inc();
  state.SetItemsProcessed(state.iterations());
}
// Threads > 1 share one counter: the contended case (one cache line bouncing).
BENCHMARK(BM_CounterInc)->Threads(1)->Threads(2);

void BM_GaugeAdd(benchmark::State& state) {
  static Registry* registry = new Registry();
  static Gauge* gauge = *(*registry->AddGauge("bench_held", "H.", {}))->WithLabels({});
  for (auto _ : state) gauge->Add(1.0);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_GaugeAdd)->Threads(1)->Threads(2);

void BM_HistogramObserve(benchmark::State& state) {
  static Registry* registry = new Registry();
  static Histogram* histogram =
      *(*registry->AddHistogram("bench_duration_seconds", "D.", {"verb"},
                                DefaultLatencyBuckets()))
           ->WithLabels({"filter"});
  double v = 0;
  for (auto _ : state) {
    histogram->Observe(v);
    v = v < 12 ? v + 0.0137 : 0;  // walks every bucket, including +Inf
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_HistogramObserve)->Threads(1)->Threads(2);

// N families, cycling counter / gauge / histogram (default latency buckets), each with 4
// children: a realistic component registry is 20-60 families.
void BM_Expose(benchmark::State& state) {
  Registry registry;
  const int n = static_cast<int>(state.range(0));
  for (int i = 0; i < n; ++i) {
    const std::string name = "phalanx_bench_metric_" + std::to_string(i);
    for (int c = 0; c < 4; ++c) {
      const std::string verb = "verb" + std::to_string(c);
      switch (i % 3) {
        case 0:
          (*(*registry.AddCounter(name + "_total", "Counter.", {"verb"}))->WithLabels({verb}))
              ->Add(1234 + c);
          break;
        case 1:
          (*(*registry.AddGauge(name, "Gauge.", {"verb"}))->WithLabels({verb}))->Set(0.5 * c);
          break;
        default:
          (*(*registry.AddHistogram(name + "_seconds", "Histogram.", {"verb"},
                                    DefaultLatencyBuckets()))
                ->WithLabels({verb}))
              ->Observe(0.003 * c);
      }
    }
  }
  size_t bytes = 0;
  for (auto _ : state) {
    std::string text = registry.Expose();
    bytes = text.size();
    benchmark::DoNotOptimize(text);
  }
  state.counters["bytes"] = static_cast<double>(bytes);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}
BENCHMARK(BM_Expose)->Arg(10)->Arg(100)->Arg(1000);

}  // namespace
}  // namespace phalanx::metrics

BENCHMARK_MAIN();
