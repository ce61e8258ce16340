#include "device-plugin/plugin/node_topology_reader.h"

#include <gtest/gtest.h>

#include "core/topology/topology_codec.h"
#include "tests/unit/device-plugin/nvml/fake_nvml_fixture.h"

namespace phalanx::device_plugin {
namespace {

class NodeTopologyReaderTest : public nvml::testing::FakeNvmlTest {};

TEST_F(NodeTopologyReaderTest, DgxH100IsNvSwitchAllToAll) {
  UseMachine("dgx-h100.json");
  auto t = ReadNodeTopology(FAKE_NVML_LIBRARY);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->gpu_count(), 8);
  EXPECT_TRUE(t->IsNvlinkAllToAll());
  EXPECT_EQ(t->links.at(0, 7).Token(), "NV18");
  EXPECT_DOUBLE_EQ(t->Bandwidth(0, 7), 450.0);
  EXPECT_EQ(t->gpus[0].product, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(t->driver_version, "535.129.03");
  EXPECT_EQ(t->cuda_version, "12.2");
  // What the device plugin publishes must round-trip through the strict codec.
  auto doc = topology::EncodeTopology(*t);
  ASSERT_TRUE(doc.ok()) << doc.status();
  auto back = topology::DecodeTopology(*doc);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, *t);
}

TEST_F(NodeTopologyReaderTest, Pcie4GpuHasBridgedPairsAndSysAcrossSockets) {
  UseMachine("pcie-4gpu.json");
  auto t = ReadNodeTopology(FAKE_NVML_LIBRARY);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->links.at(0, 1).Token(), "NV4");
  EXPECT_EQ(t->links.at(2, 3).Token(), "NV4");
  EXPECT_EQ(t->links.at(0, 2).Token(), "SYS");
  EXPECT_DOUBLE_EQ(t->gpus[0].nvlink_gbps_per_link, 14.0625);
  EXPECT_GT(t->Bandwidth(0, 1), t->Bandwidth(0, 2));
  EXPECT_EQ(t->gpus[2].numa_node, 1);
}

TEST_F(NodeTopologyReaderTest, A100MigSlicesAreListed) {
  UseMachine("a100-mig.json");
  auto t = ReadNodeTopology(FAKE_NVML_LIBRARY);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_TRUE(t->gpus[0].mig_enabled);
  EXPECT_EQ(t->gpus[0].mig_devices.size(), 7u);
  EXPECT_EQ(t->gpus[1].mig_devices.size(), 4u);
  EXPECT_EQ(t->MigDeviceCount(), 11u);
  EXPECT_TRUE(topology::EncodeTopology(*t).ok());
}

TEST_F(NodeTopologyReaderTest, NoDriverIsAClearError) {
  auto t = ReadNodeTopology(FAKE_NVML_LIBRARY);  // FAKE_NVML_MACHINE unset
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("NVML_ERROR_DRIVER_NOT_LOADED"), std::string::npos) << t.status();
  auto missing = ReadNodeTopology("/nonexistent/libnvidia-ml.so.1");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kFailedPrecondition);
}

TEST(NvlinkRateTest, ByVersionAndProduct) {
  EXPECT_DOUBLE_EQ(NvlinkRateFor(0, "X"), 0);
  EXPECT_DOUBLE_EQ(NvlinkRateFor(1, "Tesla P100"), 20);
  EXPECT_DOUBLE_EQ(NvlinkRateFor(6, "NVIDIA H100 80GB HBM3"), 25);
  EXPECT_DOUBLE_EQ(NvlinkRateFor(7, "NVIDIA B200"), 50);
  EXPECT_DOUBLE_EQ(NvlinkRateFor(4, "NVIDIA RTX A6000"), 14.0625);
}

}  // namespace
}  // namespace phalanx::device_plugin
