// SIGHUP reloads --config: a valid change restarts the servers with the new resources and
// re-registers them; an invalid or unusable file is rejected and the running
// configuration keeps serving.
#include <csignal>

#include "tests/fakes/kubelet/grpc_status.h"
#include "tests/integration/device-plugin/plugin_fixture.h"

namespace phalanx::device_plugin::testing {
namespace {

using namespace std::chrono_literals;

bool MetricsContain(int port, const std::string& line) {
  return HttpGet(port, "/metrics").find(line) != std::string::npos;
}

TEST_F(PluginTest, SighupAppliesNewMigStrategyAndReRegisters) {
  StartKubelet();
  auto cfg = WriteFile("config.yaml", "version: v1\nflags:\n  migStrategy: none\n");
  auto& d = StartDaemon("a100-mig", {"--config", cfg});
  ASSERT_TRUE(kubelet_->WaitForRegistrations(1, kDeadline)) << d.log();
  auto* gpu = Plugin("nvidia.com/gpu");
  ASSERT_NE(gpu, nullptr);
  ASSERT_TRUE(gpu->WaitForDevices([](const Devices& ds) { return ds.size() == 8; }, kDeadline));
  EXPECT_EQ(kubelet_->Plugin("nvidia.com/mig-1g.10gb"), nullptr);

  WriteFile("config.yaml", "version: v1\nflags:\n  migStrategy: mixed\n");
  d.Signal(SIGHUP);
  // nvidia.com/gpu again plus three MIG resources.
  ASSERT_TRUE(kubelet_->WaitForRegistrations(5, kDeadline)) << d.log();
  auto* mig = Plugin("nvidia.com/mig-1g.10gb");
  ASSERT_NE(mig, nullptr);
  EXPECT_TRUE(mig->WaitForDevices([](const Devices& ds) { return ds.size() == 9; }, kDeadline)) << d.log();
  gpu = Plugin("nvidia.com/gpu");
  ASSERT_NE(gpu, nullptr);
  EXPECT_TRUE(gpu->WaitForDevices([](const Devices& ds) { return ds.size() == 6; }, kDeadline)) << d.log();
  EXPECT_TRUE(d.running());
  const int port = d.MetricsPort();
  EXPECT_TRUE(WaitUntil([&] { return MetricsContain(port, "phalanx_device_plugin_config_reloads_total{result=\"applied\"} 1"); }))
      << HttpGet(port, "/metrics");
  EXPECT_TRUE(WaitUntil([&] { return HttpGet(port, "/readyz").rfind("200", 0) == 0; })) << HttpGet(port, "/readyz");
  EXPECT_TRUE(WaitUntil([&] {
    return MetricsContain(port, "phalanx_device_plugin_devices{resource=\"nvidia.com/mig-1g.10gb\",health=\"Healthy\"} 9");
  })) << HttpGet(port, "/metrics");

  // Back to no MIG: the MIG resources are gone, and so are their device counts.
  WriteFile("config.yaml", "version: v1\nflags:\n  migStrategy: none\n");
  d.Signal(SIGHUP);
  EXPECT_TRUE(WaitUntil([&] { return MetricsContain(port, "phalanx_device_plugin_config_reloads_total{result=\"applied\"} 2"); }))
      << HttpGet(port, "/metrics");
  EXPECT_TRUE(WaitUntil([&] {
    return MetricsContain(port, "phalanx_device_plugin_devices{resource=\"nvidia.com/mig-1g.10gb\",health=\"Healthy\"} 0") &&
           MetricsContain(port, "phalanx_device_plugin_devices{resource=\"nvidia.com/gpu\",health=\"Healthy\"} 8");
  })) << HttpGet(port, "/metrics");

  // SIGTERM after a reload still removes every socket of the new generation.
  d.Signal(SIGTERM);
  auto code = d.WaitExit();
  ASSERT_TRUE(code.has_value()) << d.log();
  EXPECT_EQ(*code, 0) << d.log();
  for (const auto& e : std::filesystem::directory_iterator(PluginDir())) {
    if (e.path().filename() == "kubelet.sock") continue;
    EXPECT_NE(e.path().extension(), ".sock") << e.path();
  }
}

TEST_F(PluginTest, SighupWithBadOrUnchangedConfigKeepsServing) {
  StartKubelet();
  auto cfg = WriteFile("config.yaml", "version: v1\n");
  auto& d = StartDaemon("a100-mig", {"--config", cfg});
  ASSERT_TRUE(kubelet_->WaitForRegistrations(1, kDeadline)) << d.log();
  auto* p = Plugin("nvidia.com/gpu");
  ASSERT_NE(p, nullptr);
  ASSERT_TRUE(p->WaitForDevices([](const Devices& ds) { return ds.size() == 8; }, kDeadline));
  const int port = d.MetricsPort();

  // Invalid YAML value: rejected with the path, nothing restarts.
  WriteFile("config.yaml", "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
                           "    - name: nvidia.com/gpu\n      replicas: 0\n");
  d.Signal(SIGHUP);
  ASSERT_TRUE(WaitUntil([&] { return MetricsContain(port, "phalanx_device_plugin_config_reloads_total{result=\"rejected\"} 1"); }))
      << d.log();
  EXPECT_NE(d.log().find("resources[0].replicas: must be between 1 and 1024"), std::string::npos) << d.log();
  // A valid file this node cannot satisfy (migStrategy single on mixed MIG layouts).
  WriteFile("config.yaml", "version: v1\nflags:\n  migStrategy: single\n");
  d.Signal(SIGHUP);
  ASSERT_TRUE(WaitUntil([&] { return MetricsContain(port, "phalanx_device_plugin_config_reloads_total{result=\"rejected\"} 2"); }))
      << d.log();
  // Unchanged (the original content again): a no-op.
  WriteFile("config.yaml", "version: v1\n");
  d.Signal(SIGHUP);
  ASSERT_TRUE(WaitUntil([&] { return MetricsContain(port, "phalanx_device_plugin_config_reloads_total{result=\"unchanged\"} 1"); }))
      << d.log();

  EXPECT_TRUE(d.running());
  EXPECT_EQ(kubelet_->registrations().size(), 1u);  // never re-registered
  EXPECT_EQ(p, kubelet_->Plugin("nvidia.com/gpu"));
  ASSERT_EQ(p->devices().size(), 8u);
  v1beta1::AllocateRequest req;
  req.add_container_requests()->add_devices_ids(p->devices()[0].id());
  EXPECT_TRUE(p->Allocate(req, 10s).ok());
}

}  // namespace
}  // namespace phalanx::device_plugin::testing
