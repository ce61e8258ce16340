#include "core/topology/reference_machines.h"

#include <gtest/gtest.h>

#include <set>

#include "core/topology/mig_layout.h"
#include "core/topology/topology_validation.h"

namespace phalanx::topology {
namespace {

TEST(ReferenceMachinesTest, DgxH100IsEightH100OnNvSwitchSplitOverTwoNumaNodes) {
  NodeTopology t = MakeDgxH100Node();
  ASSERT_TRUE(ValidateTopology(t).ok()) << ValidateTopology(t);
  ASSERT_EQ(t.gpu_count(), 8);
  for (int i = 0; i < 8; ++i) {
    const Gpu& gpu = t.gpus[static_cast<size_t>(i)];
    EXPECT_EQ(gpu.index, i);
    EXPECT_EQ(gpu.product, "NVIDIA H100 80GB HBM3");
    EXPECT_EQ(gpu.memory_mib, 81559u);
    EXPECT_EQ(gpu.numa_node, i < 4 ? 0 : 1);
    EXPECT_FALSE(gpu.mig_enabled);
    for (int j = 0; j < 8; ++j) EXPECT_EQ(t.links.at(i, j).Token(), i == j ? "X" : "NV18");
  }
  EXPECT_EQ(t.gpus[0].pci_bus_id, "00000000:18:00.0");
  EXPECT_EQ(t.gpus[7].pci_bus_id, "00000000:DB:00.0");
}

TEST(ReferenceMachinesTest, A100MigHasMixedLayoutsWithValidPlacements) {
  NodeTopology t = MakeA100MigNode();
  ASSERT_TRUE(ValidateTopology(t).ok()) << ValidateTopology(t);
  EXPECT_EQ(t.links.at(2, 6).Token(), "NV12");
  ASSERT_TRUE(t.gpus[0].mig_enabled);
  ASSERT_EQ(t.gpus[0].mig_devices.size(), 7u);
  for (int k = 0; k < 7; ++k) {
    const MigDevice& mig = t.gpus[0].mig_devices[static_cast<size_t>(k)];
    EXPECT_EQ(mig.profile, "1g.10gb");
    EXPECT_EQ(mig.placement_start, k);
    EXPECT_EQ(mig.placement_size, 1);
    EXPECT_EQ(mig.memory_mib, 9728u);
    EXPECT_EQ(mig.uuid.str().substr(0, 4), "MIG-");
  }
  // 3g.40gb cannot sit at slice 0 once 2g.20gb and two 1g.10gb need slices 0-3 (1g.10gb
  // may not start at slice 7), so it takes slices 4-7.
  const std::vector<MigDevice>& gpu1 = t.gpus[1].mig_devices;
  ASSERT_EQ(gpu1.size(), 4u);
  EXPECT_EQ(gpu1[0].profile, "3g.40gb");
  EXPECT_EQ(gpu1[0].placement_start, 4);
  EXPECT_EQ(gpu1[0].placement_size, 4);
  EXPECT_EQ(gpu1[1].profile, "2g.20gb");
  EXPECT_EQ(gpu1[1].placement_start, 0);
  EXPECT_EQ(gpu1[1].placement_size, 2);
  EXPECT_EQ(gpu1[2].placement_start, 2);
  EXPECT_EQ(gpu1[3].placement_start, 3);
  EXPECT_EQ(gpu1[3].gpu_instance_id, 4);
  for (size_t i = 2; i < 8; ++i) EXPECT_FALSE(t.gpus[i].mig_enabled);
}

TEST(ReferenceMachinesTest, Pcie4GpuHasNvlinkBridgedPairsAndSysAcrossNuma) {
  NodeTopology t = MakePcie4GpuNode();
  ASSERT_TRUE(ValidateTopology(t).ok()) << ValidateTopology(t);
  EXPECT_EQ(t.links.at(0, 1).Token(), "NV4");
  EXPECT_EQ(t.links.at(2, 3).Token(), "NV4");
  for (auto [i, j] : {std::pair{0, 2}, {0, 3}, {1, 2}, {1, 3}}) EXPECT_EQ(t.links.at(i, j).Token(), "SYS");
  EXPECT_EQ(t.gpus[1].numa_node, 0);
  EXPECT_EQ(t.gpus[2].numa_node, 1);
}

TEST(ReferenceMachinesTest, NvlinkPairsUsePhbWithinANumaNode) {
  NodeTopology t = MakeNvlinkPairsNode(5, "NVIDIA A100 80GB PCIe", 81920, 12, {.numa_nodes = 1});
  ASSERT_TRUE(ValidateTopology(t).ok()) << ValidateTopology(t);
  EXPECT_EQ(t.links.at(0, 1).Token(), "NV12");
  EXPECT_EQ(t.links.at(1, 2).Token(), "PHB");
  EXPECT_EQ(t.links.at(2, 3).Token(), "NV12");
  EXPECT_EQ(t.links.at(3, 4).Token(), "PHB");
  // The odd GPU out has no bridge, so it publishes no NVLink rate.
  EXPECT_EQ(t.gpus[4].nvlink_gbps_per_link, 0.0);
  EXPECT_EQ(t.gpus[3].nvlink_gbps_per_link, 25.0);
}

TEST(ReferenceMachinesTest, PcieNodeUsesTheRequestedLevelWithinNumaAndSysAcross) {
  NodeTopology t = MakePcieNode(4, "NVIDIA L40S", 46068, LinkKind::kPix);
  ASSERT_TRUE(ValidateTopology(t).ok()) << ValidateTopology(t);
  EXPECT_EQ(t.links.at(0, 1).Token(), "PIX");
  EXPECT_EQ(t.links.at(1, 2).Token(), "SYS");
  NodeTopology unknown_numa = MakePcieNode(3, "NVIDIA L4", 23034, LinkKind::kNode, {.numa_nodes = 0});
  ASSERT_TRUE(ValidateTopology(unknown_numa).ok());
  EXPECT_FALSE(unknown_numa.gpus[0].numa_node.has_value());
  EXPECT_EQ(unknown_numa.links.at(0, 2).Token(), "NODE");
}

TEST(ReferenceMachinesTest, LargestNodeIsValidWithDistinctIds) {
  NodeTopology t = MakeNvSwitchNode(kMaxGpus, "NVIDIA GB200", 189471, 18, {.numa_nodes = 4});
  ASSERT_TRUE(ValidateTopology(t).ok()) << ValidateTopology(t);
  std::set<std::string> uuids;
  for (const Gpu& gpu : t.gpus) uuids.insert(gpu.uuid.str());
  EXPECT_EQ(uuids.size(), 64u);
  EXPECT_EQ(t.gpus[63].numa_node, 3);
}

TEST(ReferenceMachinesTest, SeedsKeepUuidsDistinctAcrossNodes) {
  NodeTopology a = MakeNvSwitchNode(8, "NVIDIA H100 80GB HBM3", 81559, 18, {.uuid_seed = "node-a"});
  NodeTopology b = MakeNvSwitchNode(8, "NVIDIA H100 80GB HBM3", 81559, 18, {.uuid_seed = "node-b"});
  EXPECT_NE(a.gpus[0].uuid, b.gpus[0].uuid);
  EXPECT_EQ(a, MakeNvSwitchNode(8, "NVIDIA H100 80GB HBM3", 81559, 18, {.uuid_seed = "node-a"}));
}

TEST(MigLayoutTest, RejectsLayoutsThatCannotExist) {
  Gpu gpu = MakeA100MigNode().gpus[3];
  const Gpu before = gpu;
  auto expect_error = [&](const std::vector<std::string>& profiles, const std::string& message) {
    Status s = ApplyMigLayout(gpu, profiles);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(s.message(), message);
    EXPECT_EQ(gpu, before);
  };
  expect_error({"7g.80gb", "1g.10gb"}, "layout [7g.80gb, 1g.10gb] needs 8 compute slices, more than 7");
  expect_error({"4g.40gb", "4g.40gb"}, "layout [4g.40gb, 4g.40gb] needs 8 compute slices, more than 7");
  // 6 compute slices fit, but 4 + 3 x 2 memory slices exceed the GPU's 8.
  expect_error(
      {"3g.40gb", "1g.20gb", "1g.20gb", "1g.20gb"},
      "layout [3g.40gb, 1g.20gb, 1g.20gb, 1g.20gb] has no valid placement on \"NVIDIA A100-SXM4-80GB\"");
  expect_error({"1g.5gb"}, "unknown MIG profile \"1g.5gb\" for \"NVIDIA A100-SXM4-80GB\"");
  expect_error(std::vector<std::string>(8, "1g.10gb"), "8 MIG devices exceed the limit of 7 per GPU");
  Gpu l4 = MakePcieNode(1, "NVIDIA L4", 23034).gpus[0];
  EXPECT_EQ(ApplyMigLayout(l4, {"1g.10gb"}).message(), "no MIG profile table for product \"NVIDIA L4\"");
}

TEST(MigLayoutTest, PlacesWholeGpuAndHalvesOnH100) {
  Gpu gpu = MakeDgxH100Node().gpus[5];
  ASSERT_TRUE(ApplyMigLayout(gpu, {"7g.80gb"}).ok());
  EXPECT_EQ(gpu.mig_devices[0].placement_size, 8);
  EXPECT_EQ(gpu.mig_devices[0].memory_mib, 81152u);
  ASSERT_TRUE(ApplyMigLayout(gpu, {"3g.40gb", "3g.40gb"}).ok());
  EXPECT_EQ(gpu.mig_devices[0].placement_start, 0);
  EXPECT_EQ(gpu.mig_devices[1].placement_start, 4);
  ASSERT_TRUE(ApplyMigLayout(gpu, {}).ok());
  EXPECT_TRUE(gpu.mig_enabled);
  EXPECT_TRUE(gpu.mig_devices.empty());
  EXPECT_EQ(MigProfilesFor("NVIDIA A100-SXM4-40GB").front().name, "1g.5gb");
  EXPECT_TRUE(MigProfilesFor("Tesla V100-SXM2-32GB").empty());
}

}  // namespace
}  // namespace phalanx::topology
