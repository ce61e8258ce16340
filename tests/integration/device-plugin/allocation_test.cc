// The real daemon's Allocate, GetPreferredAllocation, MIG resources and XID handling,
// through the fake kubelet's DevicePlugin client.
#include <fstream>

#include "tests/fakes/kubelet/grpc_status.h"
#include "tests/integration/device-plugin/plugin_fixture.h"

namespace phalanx::device_plugin::testing {
namespace {

using namespace std::chrono_literals;

constexpr const char* kPcie[] = {"GPU-349a23a6-dc97-50d5-b014-908d58b8b10b", "GPU-6e10a733-a00b-5c95-81e9-d4a9649072ea",
                                 "GPU-a1930b48-810e-5cd8-a1d2-010b872b6d9e", "GPU-4ce6687a-0c69-5492-84a4-cdc1a1305a07"};
constexpr const char* kH100Gpu3 = "GPU-8f138279-e839-5131-9a35-d32537df8e6b";

v1beta1::AllocateRequest AllocateOf(std::vector<std::string> ids) {
  v1beta1::AllocateRequest r;
  auto* c = r.add_container_requests();
  for (auto& id : ids) c->add_devices_ids(id);
  return r;
}

v1beta1::PreferredAllocationRequest PreferredOf(std::vector<std::string> available, std::vector<std::string> must,
                                                int size) {
  v1beta1::PreferredAllocationRequest r;
  auto* c = r.add_container_requests();
  for (auto& id : available) c->add_available_deviceids(id);
  for (auto& id : must) c->add_must_include_deviceids(id);
  c->set_allocation_size(size);
  return r;
}

std::set<std::string> Ids(const v1beta1::PreferredAllocationResponse& r) {
  return {r.container_responses(0).deviceids().begin(), r.container_responses(0).deviceids().end()};
}

TEST_F(PluginTest, AllocateReturnsEnvAndCdiNames) {
  StartKubelet();
  auto cfg = WriteFile("config.yaml", "version: v1\nflags:\n  plugin:\n    deviceListStrategy: [envvar, cdi-cri]\n");
  auto& d = StartDaemon("pcie-4gpu", {"--config", cfg});
  ASSERT_TRUE(kubelet_->WaitForRegistrations(1, kDeadline)) << d.log();
  auto* p = Plugin("nvidia.com/gpu");
  ASSERT_NE(p, nullptr);
  auto r = p->Allocate(AllocateOf({kPcie[2], kPcie[3]}), 10s);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->container_responses_size(), 1);
  const auto& c = r->container_responses(0);
  EXPECT_EQ(c.envs().at("NVIDIA_VISIBLE_DEVICES"), std::string(kPcie[2]) + "," + kPcie[3]);
  ASSERT_EQ(c.cdi_devices_size(), 2);
  EXPECT_EQ(c.cdi_devices(0).name(), std::string("nvidia.com/gpu=") + kPcie[2]);
  EXPECT_EQ(c.cdi_devices(1).name(), std::string("nvidia.com/gpu=") + kPcie[3]);
}

TEST_F(PluginTest, UnknownOrMalformedDeviceIdsAreRejectedAndNothingChanges) {
  StartKubelet();
  auto& d = StartDaemon("pcie-4gpu");
  ASSERT_TRUE(kubelet_->WaitForRegistrations(1, kDeadline)) << d.log();
  auto* p = Plugin("nvidia.com/gpu");
  ASSERT_NE(p, nullptr);
  ASSERT_TRUE(p->WaitForDevices([](const Devices& ds) { return ds.size() == 4; }, kDeadline));
  const int updates = p->updates();
  for (std::string bad : {"GPU-not-there", "", "GPU-349a23a6-dc97-50d5-b014-908d58b8b10b::0"}) {
    auto r = p->Allocate(AllocateOf({kPcie[0], bad}), 10s);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status();
    EXPECT_NE(r.status().message().find("unknown device"), std::string::npos) << r.status();
  }
  auto pref = p->GetPreferredAllocation(PreferredOf({kPcie[0], "GPU-bogus"}, {}, 1), 10s);
  ASSERT_FALSE(pref.ok());
  EXPECT_EQ(pref.status().code(), StatusCode::kInvalidArgument);
  // Still serving, same list, and a good request works.
  EXPECT_EQ(p->updates(), updates);
  EXPECT_EQ(CountHealth(p->devices(), "Healthy"), 4);
  EXPECT_TRUE(p->Allocate(AllocateOf({kPcie[1]}), 10s).ok());
}

TEST_F(PluginTest, PreferredAllocationPicksNvlinkPairsOnPcie) {
  StartKubelet();
  auto& d = StartDaemon("pcie-4gpu");
  ASSERT_TRUE(kubelet_->WaitForRegistrations(1, kDeadline)) << d.log();
  auto* p = Plugin("nvidia.com/gpu");
  ASSERT_NE(p, nullptr);
  std::vector<std::string> all(std::begin(kPcie), std::end(kPcie));
  // Any pair must be an NVLink pair: {0,1} or {2,3}, never a PCIe-only pair.
  auto r = p->GetPreferredAllocation(PreferredOf(all, {}, 2), 10s);
  ASSERT_TRUE(r.ok()) << r.status();
  auto ids = Ids(*r);
  EXPECT_TRUE((ids == std::set<std::string>{kPcie[0], kPcie[1]}) || (ids == std::set<std::string>{kPcie[2], kPcie[3]}));
  // must_include GPU 3 -> its NVLink partner GPU 2.
  r = p->GetPreferredAllocation(PreferredOf(all, {kPcie[3]}, 2), 10s);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Ids(*r), (std::set<std::string>{kPcie[2], kPcie[3]}));
  // Shuffled availability without GPU 0: the only NVLink pair left is {2,3}.
  r = p->GetPreferredAllocation(PreferredOf({kPcie[3], kPcie[1], kPcie[2]}, {}, 2), 10s);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Ids(*r), (std::set<std::string>{kPcie[2], kPcie[3]}));
  // More than available -> RESOURCE_EXHAUSTED.
  auto bad = p->GetPreferredAllocation(PreferredOf({kPcie[0]}, {}, 2), 10s);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kResourceExhausted);
}

TEST_F(PluginTest, MigMixedAdvertisesNvidiaResourceNames) {
  StartKubelet();
  auto& d = StartDaemon("a100-mig", {"--mig-strategy", "mixed"});
  ASSERT_TRUE(kubelet_->WaitForRegistrations(4, kDeadline)) << d.log();
  std::map<std::string, size_t> expected = {{"nvidia.com/gpu", 6}, {"nvidia.com/mig-1g.10gb", 9},
                                            {"nvidia.com/mig-2g.20gb", 1}, {"nvidia.com/mig-3g.40gb", 1}};
  for (const auto& [name, n] : expected) {
    auto* p = Plugin(name);
    ASSERT_NE(p, nullptr) << name;
    EXPECT_TRUE(p->WaitForDevices([n = n](const Devices& ds) { return ds.size() == n; }, kDeadline)) << name;
  }
  auto* mig = Plugin("nvidia.com/mig-1g.10gb");
  const auto ids = mig->devices();
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids[0].id().rfind("MIG-", 0), 0u);
  auto r = mig->Allocate(AllocateOf({ids[0].id()}), 10s);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->container_responses(0).envs().at("NVIDIA_VISIBLE_DEVICES"), ids[0].id());
  // Preferred allocation packs 1g slices onto the GPU already used.
  std::vector<std::string> all;
  for (const auto& dv : ids) all.push_back(dv.id());
  auto pref = mig->GetPreferredAllocation(PreferredOf(all, {"MIG-96add8a0-345f-588f-ab5f-b1be63dfc6cd"}, 2), 10s);
  ASSERT_TRUE(pref.ok()) << pref.status();
  EXPECT_EQ(Ids(*pref), (std::set<std::string>{"MIG-96add8a0-345f-588f-ab5f-b1be63dfc6cd",
                                               "MIG-34d33bdf-e7d9-515c-8844-00068e52bf6a"}));
}

TEST_F(PluginTest, MigNoneAdvertisesWholeGpus) {
  StartKubelet();
  auto& d = StartDaemon("a100-mig");
  ASSERT_TRUE(kubelet_->WaitForRegistrations(1, kDeadline)) << d.log();
  auto* p = Plugin("nvidia.com/gpu");
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(p->WaitForDevices([](const Devices& ds) { return ds.size() == 8; }, kDeadline));
}

TEST_F(PluginTest, TimeSlicedReplicasAreAdvertisedAndMapToTheirGpu) {
  StartKubelet();
  auto cfg = WriteFile("config.yaml", "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
                                      "    - name: nvidia.com/gpu\n      replicas: 3\n");
  auto& d = StartDaemon("pcie-4gpu", {"--config", cfg});
  ASSERT_TRUE(kubelet_->WaitForRegistrations(1, kDeadline)) << d.log();
  auto* p = Plugin("nvidia.com/gpu");
  ASSERT_NE(p, nullptr);
  ASSERT_TRUE(p->WaitForDevices([](const Devices& ds) { return ds.size() == 12; }, kDeadline));
  auto r = p->Allocate(AllocateOf({std::string(kPcie[1]) + "::2"}), 10s);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->container_responses(0).envs().at("NVIDIA_VISIBLE_DEVICES"), kPcie[1]);
}

TEST_F(PluginTest, CriticalXidMarksGpuUnhealthyQuicklyIgnoredXidDoesNot) {
  StartKubelet();
  const std::string events = Path("events");
  std::ofstream(events).close();
  auto& d = StartDaemon("dgx-h100", {}, {{"FAKE_NVML_EVENTS", events}});
  ASSERT_TRUE(kubelet_->WaitForRegistrations(1, kDeadline)) << d.log();
  auto* p = Plugin("nvidia.com/gpu");
  ASSERT_NE(p, nullptr);
  ASSERT_TRUE(p->WaitForDevices([](const Devices& ds) { return CountHealth(ds, "Healthy") == 8; }, kDeadline));
  {
    std::ofstream out(events, std::ios::app);
    out << R"({"gpu": 1, "type": "xid", "xid": 13})" << "\n";   // application fault: ignored
    out << R"({"gpu": 3, "type": "xid", "xid": 79})" << "\n";   // fell off the bus
  }
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(p->WaitForDevices([](const Devices& ds) { return CountHealth(ds, "Unhealthy") == 1; }, kDeadline))
      << d.log();
  const auto elapsed = std::chrono::steady_clock::now() - t0;
  for (const auto& dv : p->devices()) {
    EXPECT_EQ(dv.health(), dv.id() == kH100Gpu3 ? "Unhealthy" : "Healthy") << dv.id();
  }
  // Target 100 ms; the bound here only catches a broken path on a loaded 2-core machine.
  EXPECT_LT(elapsed, 2s);
  auto r = p->Allocate(AllocateOf({kH100Gpu3}), 10s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("XID 79"), std::string::npos) << r.status();
  const std::string metrics = HttpGet(d.MetricsPort(), "/metrics");
  EXPECT_NE(metrics.find(std::string("phalanx_device_plugin_xid_events_total{gpu=\"") + kH100Gpu3 + "\",xid=\"79\"} 1"),
            std::string::npos) << metrics;
}

TEST_F(PluginTest, UnhealthyGpuRecoversAfterQuietPeriod) {
  StartKubelet();
  const std::string events = Path("events");
  std::ofstream(events).close();
  auto cfg = WriteFile("config.yaml", "version: v1\nphalanx:\n  health:\n    recoveryQuietSeconds: 1\n");
  auto& d = StartDaemon("pcie-4gpu", {"--config", cfg}, {{"FAKE_NVML_EVENTS", events}});
  ASSERT_TRUE(kubelet_->WaitForRegistrations(1, kDeadline)) << d.log();
  auto* p = Plugin("nvidia.com/gpu");
  ASSERT_NE(p, nullptr);
  std::ofstream(events, std::ios::app) << R"({"gpu": 0, "type": "dbe"})" << "\n";
  ASSERT_TRUE(p->WaitForDevices([](const Devices& ds) { return CountHealth(ds, "Unhealthy") == 1; }, kDeadline))
      << d.log();
  ASSERT_TRUE(p->WaitForDevices([](const Devices& ds) { return CountHealth(ds, "Healthy") == 4; }, kDeadline))
      << d.log();
}

}  // namespace
}  // namespace phalanx::device_plugin::testing
