#include "core/placement/topology_bandwidth.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/topology/reference_machines.h"

namespace phalanx::placement {
namespace {

using ::testing::ElementsAre;

TEST(TopologyBandwidthTest, PcieBoxPairsAreTheFastLinks) {
  topology::NodeTopology node = topology::MakePcie4GpuNode();
  BandwidthMatrix bw = BandwidthFromTopology(node);
  ASSERT_EQ(bw.size(), 4);
  EXPECT_EQ(bw.at(0, 1), node.Bandwidth(0, 1));
  EXPECT_GT(bw.at(0, 1), bw.at(0, 2));  // NVLink bridge beats crossing NUMA
  auto choice = ChooseDeviceSet(bw, {.count = 2, .available = WholeGpuMask(node)});
  ASSERT_TRUE(choice.ok());
  EXPECT_THAT(choice->gpus, ElementsAre(0, 1));
}

TEST(TopologyBandwidthTest, MigAndUnhealthyGpusAreNotWholeGpus) {
  topology::NodeTopology node = topology::MakeA100MigNode();  // GPUs 0 and 1 in MIG mode
  node.gpus[5].health = topology::Health::kUnhealthy;
  EXPECT_EQ(WholeGpuMask(node), GpuMask{0b11011100});
}

}  // namespace
}  // namespace phalanx::placement
