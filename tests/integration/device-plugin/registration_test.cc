// The real daemon against the fake kubelet: registration, device lists, kubelet restart,
// SIGTERM, single instance, configuration and NVML errors.
#include <filesystem>

#include "tests/integration/device-plugin/plugin_fixture.h"

namespace phalanx::device_plugin::testing {
namespace {

using namespace std::chrono_literals;

TEST_F(PluginTest, RegistersAndListsEightHealthyH100sWithNuma) {
  StartKubelet();
  auto& d = StartDaemon("dgx-h100");
  ASSERT_TRUE(kubelet_->WaitForRegistrations(1, kDeadline)) << d.log();
  auto regs = kubelet_->registrations();
  ASSERT_EQ(regs.size(), 1u);
  EXPECT_EQ(regs[0].request.resource_name(), "nvidia.com/gpu");
  EXPECT_EQ(regs[0].request.version(), "v1beta1");
  EXPECT_EQ(regs[0].request.endpoint(), "phalanx-nvidia.com-gpu.sock");
  EXPECT_TRUE(regs[0].request.options().get_preferred_allocation_available());
  auto* p = Plugin("nvidia.com/gpu");
  ASSERT_NE(p, nullptr);
  ASSERT_TRUE(p->WaitForDevices([](const Devices& ds) { return ds.size() == 8 && CountHealth(ds, "Healthy") == 8; },
                                kDeadline));
  for (const auto& dev : p->devices()) {
    EXPECT_EQ(dev.id().rfind("GPU-", 0), 0u) << dev.id();
    ASSERT_EQ(dev.topology().nodes_size(), 1) << dev.id();
  }
  EXPECT_FALSE(p->options().pre_start_required());
  EXPECT_TRUE(p->options().get_preferred_allocation_available());

  const int port = d.MetricsPort();
  ASSERT_GT(port, 0) << d.log();
  EXPECT_TRUE(WaitUntil([&] { return HttpGet(port, "/readyz").rfind("200", 0) == 0; })) << HttpGet(port, "/readyz");
  const std::string metrics = HttpGet(port, "/metrics");
  EXPECT_NE(metrics.find("phalanx_device_plugin_registrations_total{resource=\"nvidia.com/gpu\",result=\"ok\"} 1"),
            std::string::npos) << metrics;
  EXPECT_NE(metrics.find("phalanx_device_plugin_devices{resource=\"nvidia.com/gpu\",health=\"Healthy\"} 8"),
            std::string::npos) << metrics;
}

TEST_F(PluginTest, RegistersWhenKubeletStartsLater) {
  auto& d = StartDaemon("pcie-4gpu");
  ASSERT_TRUE(WaitUntil([&] { return std::filesystem::exists(PluginDir() + "/phalanx-nvidia.com-gpu.sock"); }))
      << d.log();
  StartKubelet();
  ASSERT_TRUE(kubelet_->WaitForRegistrations(1, kDeadline)) << d.log();
  auto* p = Plugin("nvidia.com/gpu");
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(p->WaitForDevices([](const Devices& ds) { return ds.size() == 4; }, kDeadline));
}

TEST_F(PluginTest, ReRegistersAfterKubeletRestart) {
  StartKubelet();
  auto& d = StartDaemon("pcie-4gpu");
  ASSERT_TRUE(kubelet_->WaitForRegistrations(1, kDeadline)) << d.log();
  ASSERT_TRUE(kubelet_->Restart().ok());
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(kubelet_->WaitForRegistrations(1, kDeadline)) << d.log();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);  // "within seconds" (issue 4)
  auto* p = Plugin("nvidia.com/gpu");
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(p->WaitForDevices([](const Devices& ds) { return ds.size() == 4; }, kDeadline));
  EXPECT_EQ(kubelet_->generation(), 1);
  // And again: the daemon keeps following kubelet.
  ASSERT_TRUE(kubelet_->Restart().ok());
  ASSERT_TRUE(kubelet_->WaitForRegistrations(1, kDeadline)) << d.log();
  const int port = d.MetricsPort();
  EXPECT_TRUE(WaitUntil([&] {
    return HttpGet(port, "/metrics").find("phalanx_device_plugin_kubelet_restarts_total 2") != std::string::npos;
  })) << HttpGet(port, "/metrics");
}

// A kubelet that recreates kubelet.sock but leaves our socket in place (NVIDIA's plugin
// relies on exactly this signal): the daemon must notice the new kubelet.sock alone.
TEST_F(PluginTest, ReRegistersWhenOnlyKubeletSockIsRecreated) {
  StartKubelet();
  auto& d = StartDaemon("pcie-4gpu");
  ASSERT_TRUE(kubelet_->WaitForRegistrations(1, kDeadline)) << d.log();
  for (int round = 1; round <= 3; ++round) {
    ASSERT_TRUE(kubelet_->Restart(FakeKubelet::RestartMode::kRecreateSocketOnly).ok());
    ASSERT_TRUE(kubelet_->WaitForRegistrations(1, kDeadline)) << "round " << round << "\n" << d.log();
    auto* p = Plugin("nvidia.com/gpu");
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(p->WaitForDevices([](const Devices& ds) { return ds.size() == 4; }, kDeadline));
  }
  EXPECT_NE(d.log().find("Saw kubelet.sock recreated"), std::string::npos) << d.log();
  EXPECT_EQ(kubelet_->generation(), 3);
}

TEST_F(PluginTest, SigtermRemovesSocketsAndExitsZero) {
  StartKubelet();
  auto& d = StartDaemon("a100-mig", {"--mig-strategy", "mixed"});
  ASSERT_TRUE(kubelet_->WaitForRegistrations(4, kDeadline)) << d.log();
  std::vector<std::string> sockets;
  for (const auto& e : std::filesystem::directory_iterator(PluginDir())) {
    if (e.path().filename().string().rfind("phalanx-", 0) == 0 && e.path().extension() == ".sock") {
      sockets.push_back(e.path());
    }
  }
  EXPECT_EQ(sockets.size(), 4u);
  d.Signal(SIGTERM);
  auto code = d.WaitExit();
  ASSERT_TRUE(code.has_value()) << d.log();
  EXPECT_EQ(*code, 0) << d.log();
  for (const auto& s : sockets) EXPECT_FALSE(std::filesystem::exists(s)) << s;
  EXPECT_TRUE(std::filesystem::exists(PluginDir() + "/kubelet.sock"));  // kubelet's is untouched
}

TEST_F(PluginTest, SecondInstanceRefusesToStart) {
  StartKubelet();
  auto& first = StartDaemon("pcie-4gpu");
  ASSERT_TRUE(kubelet_->WaitForRegistrations(1, kDeadline)) << first.log();
  DaemonProcess second({"--kubelet-dir", KubeletDir(), "--nvml-library", FAKE_NVML_LIBRARY, "--metrics-addr",
                        "127.0.0.1:0"},
                       {{"FAKE_NVML_MACHINE", Machine("pcie-4gpu")}}, Path("second.log"));
  auto code = second.WaitExit();
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 1);
  EXPECT_NE(second.log().find("another phalanx-device-plugin"), std::string::npos) << second.log();
  EXPECT_TRUE(first.running());
}

TEST_F(PluginTest, MalformedConfigExitsTwoWithThePath) {
  auto cfg = WriteFile("config.yaml", "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
                                      "    - name: nvidia.com/gpu\n      replicas: 0\n");
  auto& d = StartDaemon("pcie-4gpu", {"--config", cfg});
  auto code = d.WaitExit();
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 2);
  EXPECT_NE(d.log().find("sharing.timeSlicing.resources[0].replicas: must be between 1 and 1024, got 0"),
            std::string::npos) << d.log();
}

TEST_F(PluginTest, MigSingleOnMixedLayoutExitsTwo) {
  auto& d = StartDaemon("a100-mig", {"--mig-strategy", "single"});
  auto code = d.WaitExit();
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 2);
  EXPECT_NE(d.log().find("migStrategy single"), std::string::npos) << d.log();
}

TEST_F(PluginTest, NvmlAbsentFailsClearly) {
  auto& d = StartDaemon("");  // no FAKE_NVML_MACHINE: the fake says DRIVER_NOT_LOADED
  auto code = d.WaitExit();
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 1);
  EXPECT_NE(d.log().find("NVML initialisation failed"), std::string::npos) << d.log();
  EXPECT_NE(d.log().find("NVML_ERROR_DRIVER_NOT_LOADED"), std::string::npos) << d.log();
}

TEST_F(PluginTest, NvmlAbsentIdlesWhenAllowedAndIsNotReady) {
  auto& d = StartDaemon("", {"--fail-on-init-error=false"});
  const int port = d.MetricsPort();
  ASSERT_GT(port, 0) << d.log();
  EXPECT_TRUE(WaitUntil([&] { return HttpGet(port, "/readyz").rfind("503", 0) == 0; }));
  EXPECT_NE(HttpGet(port, "/readyz").find("NVML"), std::string::npos);
  EXPECT_EQ(HttpGet(port, "/healthz").substr(0, 3), "200");
  d.Signal(SIGTERM);
  auto code = d.WaitExit();
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 0);
}

// A GPU lost before discovery has no readable UUID, so it cannot be named to kubelet; the
// others are still served (a GPU lost later turns Unhealthy: health_monitor_test).
TEST_F(PluginTest, GpuLostAtStartIsNotAdvertisedOthersAre) {
  StartKubelet();
  auto& d = StartDaemon("pcie-4gpu", {}, {{"FAKE_NVML_LOST_GPUS", "2"}});
  ASSERT_TRUE(kubelet_->WaitForRegistrations(1, kDeadline)) << d.log();
  auto* p = Plugin("nvidia.com/gpu");
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(p->WaitForDevices([](const Devices& ds) {
    return ds.size() == 3 && CountHealth(ds, "Healthy") == 3 &&
           std::none_of(ds.begin(), ds.end(), [](const auto& x) { return x.id() == "GPU-a1930b48-810e-5cd8-a1d2-010b872b6d9e"; });
  }, kDeadline)) << d.log();
}

}  // namespace
}  // namespace phalanx::device_plugin::testing

namespace phalanx::device_plugin::testing {
namespace {

TEST_F(PluginTest, WithoutApiAccessServesKubeletAndReportsPublishingDegraded) {
  StartKubelet();
  publish_ = true;
  auto& d = StartDaemon("pcie-4gpu", {"--kubeconfig", Path("missing-kubeconfig")});
  ASSERT_TRUE(kubelet_->WaitForRegistrations(1, kDeadline)) << d.log();
  const int port = d.MetricsPort();
  // Once registered, the only reason left is publishing.
  EXPECT_TRUE(WaitUntil([&] { return HttpGet(port, "/readyz").rfind("503 publishing degraded", 0) == 0; }))
      << HttpGet(port, "/readyz");
  auto* p = Plugin("nvidia.com/gpu");
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(p->WaitForDevices([](const Devices& ds) { return ds.size() == 4; }, kDeadline));
}

}  // namespace
}  // namespace phalanx::device_plugin::testing
