#include "core/topology/node_topology.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/topology/reference_machines.h"

namespace phalanx::topology {
namespace {

// Two GPUs joined by `link`, with the given per-link NVLink rates.
NodeTopology Pair(Link link, double rate0 = 0, double rate1 = 0) {
  NodeTopology t = MakePcieNode(2, "NVIDIA A100-SXM4-80GB", 81920, LinkKind::kPhb, {.numa_nodes = 1});
  t.links.Set(0, 1, link);
  t.gpus[0].nvlink_gbps_per_link = rate0;
  t.gpus[1].nvlink_gbps_per_link = rate1;
  return t;
}

TEST(NodeTopologyTest, NvlinkBandwidthIsLinkCountTimesPerLinkRate) {
  // H100 SXM on NVSwitch: 18 links x 25 GB/s = 450 GB/s per direction.
  EXPECT_EQ(MakeDgxH100Node().Bandwidth(0, 7), 450.0);
  // A100 SXM: 12 x 25 = 300.
  EXPECT_EQ(MakeA100MigNode().Bandwidth(3, 5), 300.0);
  // RTX A6000 bridge: 4 x 14.0625 = 56.25.
  EXPECT_EQ(MakePcie4GpuNode().Bandwidth(1, 0), 56.25);
}

TEST(NodeTopologyTest, NvlinkBandwidthFollowsTheSlowerGpu) {
  EXPECT_EQ(Pair(Link::Nvlink(4), 25, 14.0625).Bandwidth(0, 1), 56.25);
  EXPECT_EQ(Pair(Link::Nvlink(4), 50, 25).Bandwidth(1, 0), 100.0);
  // Unknown rate (an unvalidated hand-built model): the NVLink 2-4 default, 25 GB/s.
  EXPECT_EQ(Pair(Link::Nvlink(2)).Bandwidth(0, 1), 50.0);
}

TEST(NodeTopologyTest, PcieBandwidthUsesTheNominalFigurePerLevel) {
  EXPECT_EQ(Pair(Link::Pcie(LinkKind::kPix)).Bandwidth(0, 1), 25.0);
  EXPECT_EQ(Pair(Link::Pcie(LinkKind::kPxb)).Bandwidth(0, 1), 22.0);
  EXPECT_EQ(Pair(Link::Pcie(LinkKind::kPhb)).Bandwidth(0, 1), 20.0);
  EXPECT_EQ(Pair(Link::Pcie(LinkKind::kNode)).Bandwidth(0, 1), 16.0);
  EXPECT_EQ(Pair(Link::Pcie(LinkKind::kSys)).Bandwidth(1, 0), 10.0);
  // A per-link NVLink rate on the GPUs does not change PCIe figures.
  EXPECT_EQ(Pair(Link::Pcie(LinkKind::kPix), 25, 25).Bandwidth(0, 1), 25.0);
}

TEST(NodeTopologyTest, SelfBandwidthIsInfiniteSoRingMinimaIgnoreIt) {
  double self = MakePcie4GpuNode().Bandwidth(2, 2);
  EXPECT_TRUE(std::isinf(self));
  EXPECT_GT(self, 0);
}

TEST(NodeTopologyTest, RingBottleneckOnPcie4GpuIsTheSysHop) {
  // Ring 0-1-2-3-0 crosses NV4 (56.25), SYS (10), NV4, SYS: bottleneck 10 GB/s.
  NodeTopology t = MakePcie4GpuNode();
  double bottleneck = std::min({t.Bandwidth(0, 1), t.Bandwidth(1, 2), t.Bandwidth(2, 3), t.Bandwidth(3, 0)});
  EXPECT_EQ(bottleneck, 10.0);
}

TEST(NodeTopologyTest, ReportsNvSwitchNodesAsAllToAll) {
  EXPECT_TRUE(MakeDgxH100Node().IsNvlinkAllToAll());
  EXPECT_TRUE(MakeA100MigNode().IsNvlinkAllToAll());
  EXPECT_FALSE(MakePcie4GpuNode().IsNvlinkAllToAll());
}

TEST(NodeTopologyTest, CountsMigDevicesOverAllGpus) {
  EXPECT_EQ(MakeA100MigNode().MigDeviceCount(), 11u);
  EXPECT_EQ(MakeDgxH100Node().MigDeviceCount(), 0u);
}

}  // namespace
}  // namespace phalanx::topology
