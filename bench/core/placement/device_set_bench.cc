// docs/architecture.md §6: device plugin GetPreferredAllocation, 8 of 16 GPUs <= 1 ms.
#include <benchmark/benchmark.h>

#include "core/placement/device_set.h"

namespace phalanx::placement {
namespace {

BandwidthMatrix Planes(int n, int plane) {
  BandwidthMatrix bw(n);
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j) bw.Set(i, j, i / plane == j / plane ? 450 : 10);
  return bw;
}

BandwidthMatrix PcieHierarchy(int n) {
  // Pairs on NVLink bridges, pairs of pairs on a PCIe switch, halves on NUMA nodes.
  BandwidthMatrix bw(n);
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j)
      bw.Set(i, j, i / 2 == j / 2 ? 100 : i / 4 == j / 4 ? 25 : i / (n / 2) == j / (n / 2) ? 20 : 10);
  return bw;
}

void BM_ChooseDeviceSet(benchmark::State& state, BandwidthMatrix bw) {
  const int n = bw.size();
  const int k = static_cast<int>(state.range(0));
  // A realistic half-used node: every third GPU taken (when possible).
  GpuMask available = (n == 64 ? ~GpuMask{0} : (GpuMask{1} << n) - 1);
  for (int g = 0; g < n && std::popcount(available) > k + 2; g += 3) available &= ~(GpuMask{1} << g);
  for (auto _ : state) {
    auto c = ChooseDeviceSet(bw, {.count = k, .available = available});
    benchmark::DoNotOptimize(c);
  }
}

// Every GPU free: the worst case for the exhaustive search, whose subset count peaks
// when k is far from both 0 and n (k of 16 for every k).
void BM_ChooseDeviceSetAllFree(benchmark::State& state, BandwidthMatrix bw) {
  const int n = bw.size();
  const int k = static_cast<int>(state.range(0));
  const GpuMask available = n == 64 ? ~GpuMask{0} : (GpuMask{1} << n) - 1;
  for (auto _ : state) {
    auto c = ChooseDeviceSet(bw, {.count = k, .available = available});
    benchmark::DoNotOptimize(c);
  }
}

BENCHMARK_CAPTURE(BM_ChooseDeviceSet, nvswitch8, Planes(8, 8))->Arg(1)->Arg(4)->Arg(8);
BENCHMARK_CAPTURE(BM_ChooseDeviceSet, pcie8, PcieHierarchy(8))->Arg(2)->Arg(4)->Arg(6);
BENCHMARK_CAPTURE(BM_ChooseDeviceSet, planes16, Planes(16, 8))->Arg(4)->Arg(8);
BENCHMARK_CAPTURE(BM_ChooseDeviceSet, pcie16, PcieHierarchy(16))->Arg(4)->Arg(8);

BENCHMARK_CAPTURE(BM_ChooseDeviceSetAllFree, nvswitch16, Planes(16, 16))->DenseRange(1, 16)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ChooseDeviceSetAllFree, planes16, Planes(16, 8))->DenseRange(1, 16)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ChooseDeviceSetAllFree, pcie16, PcieHierarchy(16))->DenseRange(1, 16)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace phalanx::placement

BENCHMARK_MAIN();
