#include "device-plugin/plugin/device_model.h"

#include <gtest/gtest.h>

#include "tests/unit/device-plugin/plugin/test_resources.h"

namespace phalanx::device_plugin {
namespace {

using testing::Gpu;
using testing::Mig;

nvml::GpuInventory MixedInventory() {
  nvml::GpuInventory inv;
  inv.gpus = {Gpu(0, true), Gpu(1, true), Gpu(2), Gpu(3)};
  inv.gpus[0].mig_devices = {Mig("MIG-a", "1g.10gb"), Mig("MIG-b", "1g.10gb"), Mig("MIG-c", "3g.40gb")};
  inv.gpus[1].mig_devices = {Mig("MIG-d", "1g.10gb+me")};
  return inv;
}

TEST(DeviceModelTest, NoneAdvertisesEveryGpuWhole) {
  Config c;
  auto r = BuildResources(MixedInventory(), c);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].name, "nvidia.com/gpu");
  EXPECT_EQ((*r)[0].devices.size(), 4u);
  EXPECT_EQ((*r)[0].devices[3].numa_node, 0);
}

TEST(DeviceModelTest, MixedSplitsByProfileWithNvidiaNames) {
  Config c;
  c.mig_strategy = MigStrategy::kMixed;
  auto r = BuildResources(MixedInventory(), c);
  ASSERT_TRUE(r.ok()) << r.status();
  std::map<std::string, size_t> sizes;
  for (const auto& s : *r) sizes[s.name] = s.devices.size();
  EXPECT_EQ(sizes, (std::map<std::string, size_t>{{"nvidia.com/gpu", 2},
                                                  {"nvidia.com/mig-1g.10gb", 2},
                                                  {"nvidia.com/mig-1g.10gb.me", 1},
                                                  {"nvidia.com/mig-3g.40gb", 1}}));
  for (const auto& s : *r) {
    if (s.name == "nvidia.com/mig-3g.40gb") {
      EXPECT_TRUE(s.mig);
      EXPECT_EQ(s.devices[0].physical.str(), "MIG-c");
      EXPECT_EQ(s.devices[0].parent_gpu.str(), "GPU-0");
      EXPECT_EQ(s.devices[0].gpu_position, 0);
    }
  }
}

TEST(DeviceModelTest, SingleNeedsOneProfileOnEveryGpu) {
  Config c;
  c.mig_strategy = MigStrategy::kSingle;
  auto r = BuildResources(MixedInventory(), c);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("migStrategy single"), std::string::npos) << r.status();

  nvml::GpuInventory inv;
  inv.gpus = {Gpu(0, true), Gpu(1, true)};
  inv.gpus[0].mig_devices = {Mig("MIG-a", "1g.10gb"), Mig("MIG-b", "1g.10gb")};
  inv.gpus[1].mig_devices = {Mig("MIG-c", "1g.10gb")};
  r = BuildResources(inv, c);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].name, "nvidia.com/gpu");
  EXPECT_EQ((*r)[0].devices.size(), 3u);
  EXPECT_TRUE((*r)[0].mig);
}

TEST(DeviceModelTest, TimeSlicingReplicasAndRename) {
  Config c;
  c.mig_strategy = MigStrategy::kMixed;
  c.time_slicing = {{.name = "nvidia.com/gpu", .replicas = 3, .rename = ""},
                    {.name = "nvidia.com/mig-1g.10gb", .replicas = 2, .rename = "nvidia.com/mig-small"},
                    {.name = "nvidia.com/mig-7g.80gb", .replicas = 2, .rename = ""}};  // absent here: skipped
  auto r = BuildResources(MixedInventory(), c);
  ASSERT_TRUE(r.ok()) << r.status();
  const ResourceSpec* gpu = nullptr;
  const ResourceSpec* small = nullptr;
  for (const auto& s : *r) {
    if (s.name == "nvidia.com/gpu") gpu = &s;
    if (s.name == "nvidia.com/mig-small") small = &s;
  }
  ASSERT_NE(gpu, nullptr);
  ASSERT_NE(small, nullptr);
  ASSERT_EQ(gpu->devices.size(), 6u);
  EXPECT_EQ(gpu->devices[0].id, "GPU-2::0");
  EXPECT_EQ(gpu->devices[5].id, "GPU-3::2");
  EXPECT_EQ(gpu->devices[5].physical.str(), "GPU-3");
  EXPECT_EQ(gpu->replicas, 3);
  EXPECT_EQ(small->devices.size(), 4u);
  c.rename_by_default = true;
  c.time_slicing.resize(1);
  r = BuildResources(MixedInventory(), c);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].name, "nvidia.com/gpu.shared");
}

TEST(DeviceModelTest, NamesAndIds) {
  EXPECT_EQ(MigResourceName("1g.10gb+me"), "nvidia.com/mig-1g.10gb.me");
  EXPECT_EQ(SocketNameFor("nvidia.com/mig-1g.10gb"), "phalanx-nvidia.com-mig-1g.10gb.sock");
  EXPECT_EQ(StripReplica("GPU-1::7"), "GPU-1");
  EXPECT_EQ(StripReplica("MIG-1"), "MIG-1");
}

}  // namespace
}  // namespace phalanx::device_plugin
