#include "device-plugin/plugin/allocation.h"

#include <set>

#include <gtest/gtest.h>

#include "core/placement/topology_bandwidth.h"
#include "core/topology/reference_machines.h"
#include "tests/unit/device-plugin/plugin/test_resources.h"

namespace phalanx::device_plugin {
namespace {

using testing::WholeGpuResource;

std::vector<std::string> AllIds(const ResourceSpec& r) {
  std::vector<std::string> out;
  for (const auto& d : r.devices) out.push_back(d.id);
  return out;
}

std::set<int> Positions(const ResourceSpec& r, const std::vector<std::string>& ids) {
  std::set<int> out;
  for (const auto& id : ids) out.insert(r.Find(id)->gpu_position);
  return out;
}

class PreferredTest : public ::testing::Test {
 protected:
  topology::NodeTopology node_ = topology::MakeNvlinkPairsNode(8, "NVIDIA RTX A6000", 49140, 4);
  ResourceSpec gpus_ = WholeGpuResource(node_);
  placement::BandwidthMatrix bw_ = placement::BandwidthFromTopology(node_);
};

TEST_F(PreferredTest, PairIsAnNvlinkPair) {
  auto c = ChoosePreferred(gpus_, bw_, {.available = AllIds(gpus_), .must_include = {}, .size = 2}, {});
  ASSERT_TRUE(c.ok()) << c.status();
  auto pos = Positions(gpus_, c->device_ids);
  ASSERT_EQ(pos.size(), 2u);
  EXPECT_EQ(*pos.begin() / 2, *pos.rbegin() / 2);  // (2k, 2k+1)
  EXPECT_EQ(*pos.begin() % 2, 0);
  EXPECT_EQ(c->source, PreferredSource::kTopology);
}

TEST_F(PreferredTest, MustIncludeGetsItsPartner) {
  auto ids = AllIds(gpus_);
  auto c = ChoosePreferred(gpus_, bw_, {.available = ids, .must_include = {ids[5]}, .size = 2}, {});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(Positions(gpus_, c->device_ids), (std::set<int>{4, 5}));
}

TEST_F(PreferredTest, ExactlyTheAvailableDevicesWhenThereIsNoChoice) {
  auto ids = AllIds(gpus_);
  std::vector<std::string> avail = {ids[6], ids[1], ids[3]};
  auto c = ChoosePreferred(gpus_, bw_, {.available = avail, .must_include = {ids[3]}, .size = 3}, {});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(Positions(gpus_, c->device_ids), (std::set<int>{1, 3, 6}));
  EXPECT_EQ(c->device_ids.size(), 3u);
}

// Two 8-GPU NVSwitch islands joined by PCIe, island A already half used: 4 GPUs come from
// A's 4 free ones (all NVSwitch either way), so island B stays whole for an 8-GPU job.
TEST(PreferredNvSwitchTest, TakesTheFragmentAndKeepsTheWholeIslandFree) {
  ResourceSpec spec{.name = "nvidia.com/gpu"};
  placement::BandwidthMatrix bw(16);
  std::vector<std::string> avail;
  for (int i = 0; i < 16; ++i) {
    AdvertisedDevice d;
    d.id = "GPU-" + std::to_string(100 + i);
    d.physical = GpuUuid(d.id);
    d.parent_gpu = d.physical;
    d.gpu_position = i;
    spec.devices.push_back(d);
    if (i >= 4) avail.push_back(d.id);  // GPUs 0-3 of island A are in use
    for (int j = 0; j < i; ++j) bw.Set(i, j, (i / 8 == j / 8) ? 450.0 : 32.0);
  }
  auto c = ChoosePreferred(spec, bw, {.available = avail, .must_include = {}, .size = 4}, {});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(Positions(spec, c->device_ids), (std::set<int>{4, 5, 6, 7}));
  c = ChoosePreferred(spec, bw, {.available = avail, .must_include = {}, .size = 2}, {});
  ASSERT_TRUE(c.ok()) << c.status();
  for (int p : Positions(spec, c->device_ids)) EXPECT_LT(p, 8) << "split island B";
}

// Without a plan the choice stays off the devices planned for other pending pods while enough
// others remain, and uses them only when it must.
TEST_F(PreferredTest, TopologyChoiceAvoidsDevicesPlannedForOthers) {
  auto ids = AllIds(gpus_);
  const std::set<std::string> planned = {ids[0], ids[1], ids[2], ids[3]};
  auto c = ChoosePreferred(gpus_, bw_, {.available = ids, .must_include = {}, .size = 2}, planned);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->source, PreferredSource::kTopology);
  for (const auto& id : c->device_ids) EXPECT_FALSE(planned.count(id)) << id;
  EXPECT_EQ(Positions(gpus_, c->device_ids).size(), 2u);
  // must-include inside the planned set is still honoured.
  c = ChoosePreferred(gpus_, bw_, {.available = ids, .must_include = {ids[1]}, .size = 2}, planned);
  ASSERT_TRUE(c.ok());
  EXPECT_NE(std::find(c->device_ids.begin(), c->device_ids.end(), ids[1]), c->device_ids.end());
  // Not enough unplanned devices: planned ones are used rather than failing kubelet.
  c = ChoosePreferred(gpus_, bw_, {.available = {ids[0], ids[1], ids[4]}, .must_include = {}, .size = 2}, planned);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->device_ids.size(), 2u);
}

TEST_F(PreferredTest, RejectsBadRequests) {
  auto ids = AllIds(gpus_);
  auto c = ChoosePreferred(gpus_, bw_, {.available = {ids[0], "GPU-nope"}, .must_include = {}, .size = 1}, {});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  c = ChoosePreferred(gpus_, bw_, {.available = ids, .must_include = {ids[0], ids[1]}, .size = 1}, {});
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  c = ChoosePreferred(gpus_, bw_, {.available = {ids[0]}, .must_include = {}, .size = 2}, {});
  EXPECT_EQ(c.status().code(), StatusCode::kResourceExhausted);
  c = ChoosePreferred(gpus_, bw_, {.available = ids, .must_include = {}, .size = 0}, {});
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
}

TEST(PreferredReplicasTest, SpreadsOverGpusFirst) {
  nvml::GpuInventory inv;
  inv.gpus = {testing::Gpu(0), testing::Gpu(1), testing::Gpu(2)};
  Config config;
  config.time_slicing = {{.name = "nvidia.com/gpu", .replicas = 4, .rename = ""}};
  auto r = BuildResources(inv, config);
  ASSERT_TRUE(r.ok());
  const ResourceSpec& spec = (*r)[0];
  placement::BandwidthMatrix bw(3);
  auto c = ChoosePreferred(spec, bw, {.available = AllIds(spec), .must_include = {}, .size = 3}, {});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(Positions(spec, c->device_ids).size(), 3u);
  c = ChoosePreferred(spec, bw, {.available = AllIds(spec), .must_include = {"GPU-1::0"}, .size = 2}, {});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(Positions(spec, c->device_ids).size(), 2u);
}

TEST(PreferredMigTest, PacksOntoTheFullestGpu) {
  ResourceSpec r{.name = "nvidia.com/mig-1g.10gb", .mig = true};
  auto add = [&](const std::string& id, int pos) {
    r.devices.push_back(AdvertisedDevice{.id = id, .physical = GpuUuid(id),
                                         .parent_gpu = GpuUuid("GPU-" + std::to_string(pos)),
                                         .gpu_position = pos, .mig = true});
  };
  add("MIG-a0", 0), add("MIG-a1", 0), add("MIG-a2", 0), add("MIG-b0", 1), add("MIG-b1", 1);
  placement::BandwidthMatrix bw(2);
  // GPU 1 has fewer free slices: fill it before breaking into GPU 0.
  auto c = ChoosePreferred(r, bw, {.available = AllIds(r), .must_include = {}, .size = 2}, {});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(Positions(r, c->device_ids), (std::set<int>{1}));
}

class AllocateTest : public ::testing::Test {
 protected:
  topology::NodeTopology node_ = topology::MakePcie4GpuNode();
  ResourceSpec gpus_ = WholeGpuResource(node_);
  HealthTable health_;
  Config config_;
};

TEST_F(AllocateTest, EnvvarListsUuids) {
  auto ids = AllIds(gpus_);
  auto a = BuildAllocation(gpus_, {ids[1], ids[0]}, config_, health_);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->envs().at("NVIDIA_VISIBLE_DEVICES"), ids[1] + "," + ids[0]);
  EXPECT_EQ(a->cdi_devices_size(), 0);
  EXPECT_EQ(a->mounts_size(), 0);
  EXPECT_EQ(a->devices_size(), 0);
}

TEST_F(AllocateTest, VolumeMountsCdiAnnotationsAndDeviceSpecs) {
  config_.device_list_strategies = {DeviceListStrategy::kVolumeMounts, DeviceListStrategy::kCdiAnnotations,
                                    DeviceListStrategy::kCdiCri};
  config_.pass_device_specs = true;
  auto ids = AllIds(gpus_);
  auto a = BuildAllocation(gpus_, {ids[2]}, config_, health_);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->envs().at("NVIDIA_VISIBLE_DEVICES"), kVolumeMountRoot);
  ASSERT_EQ(a->mounts_size(), 1);
  EXPECT_EQ(a->mounts(0).container_path(), std::string(kVolumeMountRoot) + "/" + ids[2]);
  EXPECT_EQ(a->mounts(0).host_path(), "/dev/null");
  ASSERT_EQ(a->annotations_size(), 1);
  EXPECT_EQ(a->annotations().begin()->second, "nvidia.com/gpu=" + ids[2]);
  EXPECT_EQ(a->annotations().begin()->first.rfind("cdi.k8s.io/", 0), 0u);
  ASSERT_EQ(a->cdi_devices_size(), 1);
  EXPECT_EQ(a->cdi_devices(0).name(), "nvidia.com/gpu=" + ids[2]);
  ASSERT_EQ(a->devices_size(), 4);
  EXPECT_EQ(a->devices(3).host_path(), "/dev/nvidia2");
}

TEST_F(AllocateTest, RejectsUnknownAndUnhealthy) {
  auto ids = AllIds(gpus_);
  auto a = BuildAllocation(gpus_, {ids[0], "GPU-x"}, config_, health_);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(a.status().message().find("unknown device \"GPU-x\""), std::string::npos);
  health_.SetUnhealthy(ids[3], "XID 79", 79, MonotonicTime{});
  a = BuildAllocation(gpus_, {ids[3]}, config_, health_);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(a.status().message().find("XID 79"), std::string::npos);
  EXPECT_EQ(BuildAllocation(gpus_, {}, config_, health_).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(AllocateTest, ReplicasCollapseToTheirGpuAndCanBeLimitedToOne) {
  nvml::GpuInventory inv;
  inv.gpus = {testing::Gpu(0), testing::Gpu(1)};
  config_.time_slicing = {{.name = "nvidia.com/gpu", .replicas = 2, .rename = ""}};
  auto r = BuildResources(inv, config_);
  ASSERT_TRUE(r.ok());
  auto a = BuildAllocation((*r)[0], {"GPU-0::0", "GPU-0::1", "GPU-1::0"}, config_, health_);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->envs().at("NVIDIA_VISIBLE_DEVICES"), "GPU-0,GPU-1");
  config_.fail_requests_greater_than_one = true;
  a = BuildAllocation((*r)[0], {"GPU-0::0", "GPU-1::0"}, config_, health_);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("failRequestsGreaterThanOne"), std::string::npos);
}

}  // namespace
}  // namespace phalanx::device_plugin
