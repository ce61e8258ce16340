#include "core/placement/device_set.h"

#include <cmath>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace phalanx::placement {
namespace {

using ::testing::ElementsAre;

constexpr double kNvSwitch = 450;  // H100 SXM: 18 links x 25 GB/s
constexpr double kNv4 = 100;       // 4-link bridge
constexpr double kNv2 = 50;
constexpr double kPhb = 20;
constexpr double kSys = 10;

GpuMask Mask(std::initializer_list<int> gpus) {
  GpuMask m = 0;
  for (int g : gpus) m |= GpuMask{1} << g;
  return m;
}
GpuMask All(int n) { return (GpuMask{1} << n) - 1; }

BandwidthMatrix NvSwitch(int n) {
  BandwidthMatrix bw(n);
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j) bw.Set(i, j, kNvSwitch);
  return bw;
}

// 4 GPUs: NVLink bridges 0-1 and 2-3; 0,1 on NUMA 0 and 2,3 on NUMA 1.
BandwidthMatrix PcieFour() {
  BandwidthMatrix bw(4);
  bw.Set(0, 1, kNv4);
  bw.Set(2, 3, kNv4);
  bw.Set(0, 2, kSys);
  bw.Set(0, 3, kSys);
  bw.Set(1, 2, kSys);
  bw.Set(1, 3, kSys);
  return bw;
}

// DGX-1-like hybrid cube-mesh: quads {0..3} and {4..7} all-to-all over NVLink, plus
// links i <-> i+4; everything else crosses the SMP interconnect.
BandwidthMatrix CubeMesh() {
  BandwidthMatrix bw(8);
  for (int i = 0; i < 8; ++i)
    for (int j = i + 1; j < 8; ++j) bw.Set(i, j, kSys);
  for (int q : {0, 4})
    for (int i = q; i < q + 4; ++i)
      for (int j = i + 1; j < q + 4; ++j) bw.Set(i, j, kNv2);
  for (int i = 0; i < 4; ++i) bw.Set(i, i + 4, kNv2);
  return bw;
}

// Two NVSwitch planes of 8 joined by the SMP interconnect (16 GPUs: bounded search).
BandwidthMatrix TwoPlanes() {
  BandwidthMatrix bw(16);
  for (int i = 0; i < 16; ++i)
    for (int j = i + 1; j < 16; ++j) bw.Set(i, j, (i < 8) == (j < 8) ? kNvSwitch : kSys);
  return bw;
}

TEST(RingBottleneckTest, SingleTwoAndMany) {
  BandwidthMatrix bw = PcieFour();
  std::vector<int> one{2}, two{0, 1}, four{0, 1, 2, 3};
  EXPECT_TRUE(std::isinf(RingBottleneck(bw, one)));
  EXPECT_EQ(RingBottleneck(bw, two), kNv4);
  // Any ring through all four crosses NUMA twice: bottleneck = SYS.
  EXPECT_EQ(RingBottleneck(bw, four), kSys);
}

TEST(RingBottleneckTest, FindsNvlinkRingInCubeMeshThatIsNotAClique) {
  BandwidthMatrix bw = CubeMesh();
  // 0-1-5-4-0 is all NVLink although 0-5 and 1-4 are not linked.
  std::vector<int> square{0, 1, 4, 5};
  EXPECT_EQ(RingBottleneck(bw, square), kNv2);
  // All 8: 0-1-2-3-7-6-5-4-0 is all NVLink.
  std::vector<int> all{0, 1, 2, 3, 4, 5, 6, 7};
  EXPECT_EQ(RingBottleneck(bw, all), kNv2);
  // 0, 5, 2, 7: no NVLink ring (0-5 and 2-7 missing; 0-2 and 5-7 present, 0-7/2-5 missing).
  std::vector<int> diagonal{0, 2, 5, 7};
  EXPECT_EQ(RingBottleneck(bw, diagonal), kSys);
}

TEST(DeviceSetTest, PcieBoxPicksAnNvlinkPair) {
  auto c = ChooseDeviceSet(PcieFour(), {.count = 2, .available = All(4)});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(c->gpus, ElementsAre(0, 1));
  EXPECT_EQ(c->ring_bandwidth_gbps, kNv4);
  EXPECT_TRUE(c->exhaustive);
}

TEST(DeviceSetTest, PcieBoxWithOneUsedPicksItsPartnerToKeepTheOtherPairWhole) {
  // GPU 0 is taken. Any single GPU is equally fast; taking 1 leaves the 2-3 bridge intact.
  auto c = ChooseDeviceSet(PcieFour(), {.count = 1, .available = Mask({1, 2, 3})});
  ASSERT_TRUE(c.ok());
  EXPECT_THAT(c->gpus, ElementsAre(1));
}

TEST(DeviceSetTest, PcieBoxPairAcrossNumaWhenNoBridgeIsFree) {
  auto c = ChooseDeviceSet(PcieFour(), {.count = 2, .available = Mask({1, 3})});
  ASSERT_TRUE(c.ok());
  EXPECT_THAT(c->gpus, ElementsAre(1, 3));
  EXPECT_EQ(c->ring_bandwidth_gbps, kSys);
}

TEST(DeviceSetTest, NvSwitchTiesKeepLowestIndices) {
  auto c = ChooseDeviceSet(NvSwitch(8), {.count = 4, .available = All(8)});
  ASSERT_TRUE(c.ok());
  EXPECT_THAT(c->gpus, ElementsAre(0, 1, 2, 3));
  EXPECT_EQ(c->ring_bandwidth_gbps, kNvSwitch);
}

TEST(DeviceSetTest, CubeMeshPrefersAQuad) {
  auto c = ChooseDeviceSet(CubeMesh(), {.count = 4, .available = All(8)});
  ASSERT_TRUE(c.ok());
  EXPECT_THAT(c->gpus, ElementsAre(0, 1, 2, 3));
  EXPECT_EQ(c->ring_bandwidth_gbps, kNv2);
}

TEST(DeviceSetTest, CubeMeshAvoidsBreakingTheFreeQuad) {
  // 6 and 7 are taken. Two GPUs wanted: the lowest NVLink pair 0-1 would leave
  // {2,3,4,5} = two separate pairs; 4-5 leaves quad 0..3 whole, so 4-5 wins.
  auto c = ChooseDeviceSet(CubeMesh(), {.count = 2, .available = Mask({0, 1, 2, 3, 4, 5})});
  ASSERT_TRUE(c.ok());
  EXPECT_THAT(c->gpus, ElementsAre(4, 5));
  EXPECT_EQ(c->ring_bandwidth_gbps, kNv2);
}

TEST(DeviceSetTest, MustIncludeIsHonoured) {
  auto c = ChooseDeviceSet(PcieFour(), {.count = 2, .available = All(4), .must_include = Mask({2})});
  ASSERT_TRUE(c.ok());
  EXPECT_THAT(c->gpus, ElementsAre(2, 3));
}

TEST(DeviceSetTest, BoundedSearchOnSixteenGpusPicksTheFreePlane) {
  // Plane 0..7 has two GPUs in use: the only 8 GPUs on one NVSwitch are 8..15.
  GpuMask available = All(16) & ~Mask({0, 5});
  auto c = ChooseDeviceSet(TwoPlanes(), {.count = 8, .available = available});
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->exhaustive);
  EXPECT_THAT(c->gpus, ElementsAre(8, 9, 10, 11, 12, 13, 14, 15));
  EXPECT_EQ(c->ring_bandwidth_gbps, kNvSwitch);
}

TEST(DeviceSetTest, BoundedSearchBestFitsIntoTheFullerPlane) {
  GpuMask available = All(16) & ~Mask({0, 1});  // plane 0 has 6 free, plane 1 has 8
  auto c = ChooseDeviceSet(TwoPlanes(), {.count = 6, .available = available});
  ASSERT_TRUE(c.ok());
  EXPECT_THAT(c->gpus, ElementsAre(2, 3, 4, 5, 6, 7));
}

TEST(DeviceSetTest, BoundedSearchSpansPlanesOnlyWhenItMust) {
  auto c = ChooseDeviceSet(TwoPlanes(), {.count = 10, .available = All(16)});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->gpus.size(), 10u);
  EXPECT_EQ(c->ring_bandwidth_gbps, kSys);
}

TEST(DeviceSetTest, ErrorsAreSpecific) {
  BandwidthMatrix bw = PcieFour();
  EXPECT_EQ(ChooseDeviceSet(bw, {.count = 3, .available = Mask({0, 1})}).status().code(),
            StatusCode::kResourceExhausted);
  EXPECT_EQ(ChooseDeviceSet(bw, {.count = 0, .available = All(4)}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ChooseDeviceSet(bw, {.count = 1, .available = Mask({7})}).status().message(),
            "available GPUs outside the node's GPU range");
  EXPECT_EQ(ChooseDeviceSet(bw, {.count = 1, .available = Mask({0}), .must_include = Mask({1})})
                .status()
                .code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ChooseDeviceSet(bw, {.count = 1, .available = All(4), .must_include = Mask({0, 1})})
                .status()
                .code(),
            StatusCode::kInvalidArgument);
}

// Exhaustive and bounded search agree on ring quality wherever both apply.
TEST(DeviceSetTest, ExhaustiveIsNeverWorseThanAnyOtherSubset) {
  BandwidthMatrix bw = CubeMesh();
  for (int k = 1; k <= 8; ++k) {
    SCOPED_TRACE(k);
    auto c = ChooseDeviceSet(bw, {.count = k, .available = All(8)});
    ASSERT_TRUE(c.ok());
    for (GpuMask m = 0; m < 256; ++m) {
      if (std::popcount(m) != k) continue;
      std::vector<int> gpus;
      for (int g = 0; g < 8; ++g)
        if (m & (GpuMask{1} << g)) gpus.push_back(g);
      EXPECT_LE(RingBottleneck(bw, gpus), c->ring_bandwidth_gbps);
    }
  }
}

}  // namespace
}  // namespace phalanx::placement
