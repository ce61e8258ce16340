// The fast exhaustive device-set search (level masks, cheap exact ring tests, pruning by
// the best ring so far) must choose exactly what the original slow search chose. Random
// small nodes with few distinct link speeds, so ties and sparse meshes are common.
#include <random>

#include <gtest/gtest.h>

#include "core/placement/device_set.h"
#include "tests/unit/core/placement/device_set_reference.h"

namespace phalanx::placement {
namespace {

BandwidthMatrix RandomMatrix(std::mt19937& rng, int n) {
  static constexpr double kSpeeds[] = {10, 20, 25, 50, 100, 450};
  // A sparse fast graph over a uniform slow floor: the shape of meshes and bridges.
  const double fast_share = std::uniform_real_distribution<double>(0.1, 0.9)(rng);
  BandwidthMatrix bw(n);
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j) {
      const bool fast = std::uniform_real_distribution<double>(0, 1)(rng) < fast_share;
      bw.Set(i, j, fast ? kSpeeds[2 + rng() % 4] : kSpeeds[rng() % 2]);
    }
  return bw;
}

std::vector<int> Members(GpuMask m) {
  std::vector<int> out;
  for (int g = 0; m; ++g, m >>= 1)
    if (m & 1) out.push_back(g);
  return out;
}

TEST(DeviceSetEquivalenceTest, RingBottleneckMatchesTheBitmaskDp) {
  std::mt19937 rng(11);
  for (int round = 0; round < 3000; ++round) {
    const int n = 3 + static_cast<int>(rng() % 10);
    BandwidthMatrix bw = RandomMatrix(rng, n);
    GpuMask set = rng() & ((GpuMask{1} << n) - 1);
    std::vector<int> gpus = Members(set);
    ASSERT_EQ(RingBottleneck(bw, gpus), reference::ReferenceRingBottleneck(bw, gpus)) << "round " << round;
  }
}

TEST(DeviceSetEquivalenceTest, ExhaustiveChoiceMatchesTheOriginalSearch) {
  std::mt19937 rng(5);
  int compared = 0;
  for (int round = 0; round < 1500; ++round) {
    const int n = 2 + static_cast<int>(rng() % 11);
    BandwidthMatrix bw = RandomMatrix(rng, n);
    GpuMask available = rng() & ((GpuMask{1} << n) - 1);
    if (round % 3 == 0) available = (GpuMask{1} << n) - 1;
    const int free = std::popcount(available);
    if (free == 0) continue;
    DeviceSetRequest req{.count = 1 + static_cast<int>(rng() % static_cast<unsigned>(free)),
                         .available = available};
    if (round % 4 == 0) {  // one must-include GPU
      std::vector<int> free_gpus = Members(available);
      req.must_include = GpuMask{1} << free_gpus[rng() % free_gpus.size()];
    }
    auto got = ChooseDeviceSet(bw, req);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    if (!got->exhaustive) continue;
    DeviceSetChoice want = reference::ReferenceExhaustiveChoice(bw, req);
    ASSERT_EQ(got->gpus, want.gpus) << "round " << round << " n " << n << " count " << req.count;
    ASSERT_EQ(got->ring_bandwidth_gbps, want.ring_bandwidth_gbps) << "round " << round;
    ++compared;
  }
  EXPECT_GT(compared, 1000);
}

}  // namespace
}  // namespace phalanx::placement
