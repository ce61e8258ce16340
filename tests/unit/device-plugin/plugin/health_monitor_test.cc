// HealthMonitor against the fake NVML driver in-process: XID events from a file, a GPU
// lost mid-run (FAKE_NVML_LOST_GPUS is re-read on every call), recovery.
#include "device-plugin/health/health_monitor.h"

#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "core/log/log.h"
#include "core/log/logger_factory.h"
#include "device-plugin/nvml/gpu_discovery.h"
#include "device-plugin/nvml/nvml_session.h"
#include "tests/unit/device-plugin/nvml/fake_nvml_fixture.h"

namespace phalanx::device_plugin {
namespace {

using namespace std::chrono_literals;

bool WaitUntil(const std::function<bool()>& cond, std::chrono::milliseconds deadline = 20s) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  while (!cond()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

class HealthMonitorTest : public nvml::testing::FakeNvmlTest {
 protected:
  void Open(const std::string& machine) {
    UseMachine(machine);
    events_ = TempDir() + "/events";
    std::ofstream(events_).close();
    SetEnv("FAKE_NVML_EVENTS", events_);
    lib_ = LoadFake();
    ASSERT_NE(lib_, nullptr);
    auto s = nvml::NvmlSession::Open(*lib_);
    ASSERT_TRUE(s.ok()) << s.status();
    session_ = std::move(s).value();
    auto inv = nvml::DiscoverGpus(*lib_);
    ASSERT_TRUE(inv.ok()) << inv.status();
    inventory_ = *inv;
  }
  void TearDown() override {
    monitor_.reset();
    session_.reset();
    lib_.reset();
    FakeNvmlTest::TearDown();
  }
  void StartMonitor(HealthConfig config) {
    monitor_ = std::make_unique<HealthMonitor>(*lib_, inventory_, config, table_, nullptr,
                                               log::MakeLogger("test"),
                                               HealthMonitorOptions{.wait_slice = 20ms, .probe_interval = 20ms});
    monitor_->Start();
  }
  void Inject(const std::string& line) { std::ofstream(events_, std::ios::app) << line << "\n"; }

  std::string events_;
  std::unique_ptr<nvml::DlNvml> lib_;
  std::unique_ptr<nvml::NvmlSession> session_;
  nvml::GpuInventory inventory_;
  HealthTable table_;
  std::unique_ptr<HealthMonitor> monitor_;
};

TEST_F(HealthMonitorTest, XidOnMigDeviceMarksOnlyThatDevice) {
  Open("a100-mig.json");
  StartMonitor(HealthConfig{});
  Inject(R"({"gpu": "MIG-c0d42a50-d182-5147-8126-b322ac2c894a", "type": "xid", "xid": 94})");
  ASSERT_TRUE(WaitUntil([&] { return !table_.Get("MIG-c0d42a50-d182-5147-8126-b322ac2c894a").healthy; }));
  EXPECT_EQ(table_.Get("MIG-c0d42a50-d182-5147-8126-b322ac2c894a").reason, "XID 94");
  EXPECT_TRUE(table_.Get(inventory_.gpus[1].uuid.str()).healthy);
  EXPECT_EQ(table_.Unhealthy().size(), 1u);
}

// Failing waits (a driver hiccup) are retried; they never mark GPUs unhealthy, and events
// after them still arrive.
TEST_F(HealthMonitorTest, TransientWaitErrorsMarkNothingUnhealthy) {
  Open("dgx-h100.json");
  StartMonitor(HealthConfig{});
  for (int i = 0; i < 5; ++i) Inject(R"({"type": "wait-error"})");
  ASSERT_TRUE(WaitUntil([&] { return monitor_->wait_errors() >= 5; })) << monitor_->wait_errors();
  EXPECT_TRUE(table_.Unhealthy().empty());
  Inject(R"({"gpu": 6, "type": "xid", "xid": 79})");
  ASSERT_TRUE(WaitUntil([&] { return !table_.Get(inventory_.gpus[6].uuid.str()).healthy; }));
  EXPECT_EQ(table_.Unhealthy().size(), 1u);
}

TEST_F(HealthMonitorTest, GpuLostMidRunTurnsUnhealthyAndRecoversWhenBack) {
  Open("pcie-4gpu.json");
  HealthConfig config;
  config.recovery_quiet_seconds = 1;
  StartMonitor(config);
  const std::string gpu1 = inventory_.gpus[1].uuid.str();
  SetEnv("FAKE_NVML_LOST_GPUS", "1");
  ASSERT_TRUE(WaitUntil([&] { return !table_.Get(gpu1).healthy; }));
  EXPECT_NE(table_.Get(gpu1).reason.find("GPU is lost"), std::string::npos) << table_.Get(gpu1).reason;
  EXPECT_EQ(table_.Unhealthy().size(), 1u);  // never every GPU
  SetEnv("FAKE_NVML_LOST_GPUS", std::nullopt);
  ASSERT_TRUE(WaitUntil([&] { return table_.Get(gpu1).healthy; }));
}

TEST_F(HealthMonitorTest, NoRecoveryWhenQuietPeriodIsZero) {
  Open("pcie-4gpu.json");
  HealthConfig config;
  config.recovery_quiet_seconds = 0;
  StartMonitor(config);
  Inject(R"({"gpu": 2, "type": "xid", "xid": 48})");
  ASSERT_TRUE(WaitUntil([&] { return table_.Unhealthy().size() == 1; }));
  // Several probe passes later it is still unhealthy (probe interval 20 ms).
  for (int i = 0; i < 5; ++i) monitor_->ProbeOnce();
  EXPECT_EQ(table_.Unhealthy().size(), 1u);
  EXPECT_EQ(monitor_->events_seen(), 1u);
}

}  // namespace
}  // namespace phalanx::device_plugin
