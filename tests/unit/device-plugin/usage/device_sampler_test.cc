// DeviceSampler against the fake NVML driver: curves, MIG devices, unsupported entry points
// (fallbacks, reported once), failing calls (reported on change, never an error loop).
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "device-plugin/nvml/device_sampler.h"
#include "device-plugin/nvml/gpu_discovery.h"
#include "device-plugin/nvml/nvml_session.h"
#include "tests/unit/device-plugin/nvml/fake_nvml_fixture.h"

namespace phalanx::nvml {
namespace {

class DeviceSamplerTest : public testing::FakeNvmlTest {
 protected:
  void Open(const std::string& machine_path) {
    SetEnv("FAKE_NVML_MACHINE", machine_path);
    nvml_ = LoadFake();
    ASSERT_NE(nvml_, nullptr);
    auto session = NvmlSession::Open(*nvml_);
    ASSERT_TRUE(session.ok()) << session.status();
    session_ = std::move(session).value();
    auto inventory = DiscoverGpus(*nvml_);
    ASSERT_TRUE(inventory.ok()) << inventory.status();
    inventory_ = std::move(inventory).value();
  }
  // A copy of a bundled machine with `edit` applied.
  std::string Edited(const std::string& file, const std::function<void(nlohmann::json&)>& edit) {
    std::ifstream in(MachinePath(file));
    nlohmann::json m = nlohmann::json::parse(in);
    edit(m);
    const std::string path = TempDir() + "/" + file;
    std::ofstream(path) << m.dump();
    return path;
  }
  static int Count(const std::vector<SampleNotice>& n, SampleQuery q, bool unsupported) {
    int c = 0;
    for (const auto& x : n) c += x.query == q && x.unsupported == unsupported && !x.status.ok();
    return c;
  }

  std::unique_ptr<DlNvml> nvml_;
  std::unique_ptr<NvmlSession> session_;
  GpuInventory inventory_;
};

TEST_F(DeviceSamplerTest, ReadsEveryQuantityOfTheCurves) {
  Open(MachinePath("pcie-4gpu-utilisation.json"));
  DeviceSampler sampler(*nvml_, inventory_);
  std::vector<SampleNotice> notices;
  auto s = sampler.SampleAll(&notices);
  ASSERT_EQ(s.size(), 4u);
  ASSERT_EQ(notices.size(), 4u);  // only: no GPM on these (pre-Hopper) GPUs, once each
  EXPECT_EQ(Count(notices, SampleQuery::kGpm, true), 4);
  EXPECT_EQ(s[0].uuid, inventory_.gpus[0].uuid.str());
  EXPECT_EQ(s[0].sm_util, 3.0);
  EXPECT_EQ(s[1].sm_util, 60.0);
  EXPECT_EQ(s[1].mem_util, 35.0);
  EXPECT_EQ(s[1].memory_used_bytes, 30000ull << 20);
  EXPECT_EQ(s[1].memory_total_bytes, 49140ull << 20);
  EXPECT_DOUBLE_EQ(*s[1].power_watts, 60 + 6 * 60);  // the fake's power model
  EXPECT_EQ(s[1].sm_clock_max_mhz, 1980.0);
  EXPECT_GT(*s[1].sm_clock_mhz, *s[0].sm_clock_mhz);
  EXPECT_EQ(s[3].sm_util, 90.0);  // idleAfter: busy for its first 5 s
}

TEST_F(DeviceSamplerTest, MigDevicesHaveMemoryButNoSmUtilisationAndSayItOnce) {
  Open(Edited("a100-mig.json", [](nlohmann::json& m) { m["gpus"][0]["migDevices"][0]["memoryUsedMiB"] = 512; }));
  DeviceSampler sampler(*nvml_, inventory_);
  ASSERT_EQ(sampler.device_count(), 8u + 7u + 4u);
  std::vector<SampleNotice> first;
  auto s = sampler.SampleAll(&first);
  const DeviceSample& mig = s[1];  // GPU 0's first MIG device
  ASSERT_TRUE(mig.mig);
  EXPECT_EQ(mig.parent_uuid, inventory_.gpus[0].uuid.str());
  EXPECT_FALSE(mig.sm_util.has_value());
  EXPECT_EQ(mig.memory_used_bytes, 512ull << 20);
  EXPECT_FALSE(mig.power_watts.has_value());
  EXPECT_FALSE(s[0].sm_util.has_value());  // a GPU in MIG mode has no utilisation either
  EXPECT_TRUE(s[0].power_watts.has_value());
  // Utilisation rates and the process fallback: one notice each per MIG-mode device, once.
  EXPECT_EQ(Count(first, SampleQuery::kUtilizationRates, true), 2 + 7 + 4);
  EXPECT_EQ(Count(first, SampleQuery::kProcessUtilization, true), 2 + 7 + 4);
  std::vector<SampleNotice> second;
  sampler.SampleAll(&second);
  EXPECT_TRUE(second.empty());
  EXPECT_EQ(sampler.errors(), 0u);
}

TEST_F(DeviceSamplerTest, UnsupportedRatesFallBackToProcessUtilisationAndPowerToFieldValues) {
  Open(Edited("pcie-4gpu-utilisation.json", [](nlohmann::json& m) {
    m["unsupported"] = {"nvmlDeviceGetUtilizationRates", "nvmlDeviceGetPowerUsage"};
  }));
  DeviceSampler sampler(*nvml_, inventory_);
  std::vector<SampleNotice> notices;
  auto s = sampler.SampleAll(&notices);
  EXPECT_EQ(s[0].sm_util, 3.0);
  EXPECT_EQ(s[1].sm_util, 60.0);
  EXPECT_DOUBLE_EQ(*s[1].power_watts, 420.0);  // NVML_FI_DEV_POWER_INSTANT
  EXPECT_EQ(Count(notices, SampleQuery::kUtilizationRates, true), 4);
  EXPECT_EQ(Count(notices, SampleQuery::kPowerUsage, true), 4);
  // Nothing newer than the last sample: the process query finds none, which is not an error.
  s = sampler.SampleAll(&notices);
  EXPECT_TRUE(s[1].sm_util.has_value());
}

TEST_F(DeviceSamplerTest, EverythingUnsupportedDegradesToMemoryOnly) {
  Open(MachinePath("pcie-4gpu-utilisation.json"));
  SetEnv("FAKE_NVML_UNSUPPORTED",
         "nvmlDeviceGetUtilizationRates,nvmlDeviceGetProcessUtilization,nvmlDeviceGetPowerUsage,"
         "nvmlDeviceGetFieldValues,nvmlDeviceGetClockInfo,nvmlDeviceGetMaxClockInfo");
  DeviceSampler sampler(*nvml_, inventory_);
  std::vector<SampleNotice> notices;
  auto s = sampler.SampleAll(&notices);
  EXPECT_FALSE(s[0].sm_util.has_value());
  EXPECT_FALSE(s[0].power_watts.has_value());
  EXPECT_FALSE(s[0].sm_clock_mhz.has_value());
  EXPECT_EQ(s[0].memory_used_bytes, 2048ull << 20);
  EXPECT_EQ(notices.size(), 4u * 7u);  // the six queries and GPM, once per GPU
  notices.clear();
  for (int i = 0; i < 5; ++i) sampler.SampleAll(&notices);
  EXPECT_TRUE(notices.empty());
}

TEST_F(DeviceSamplerTest, AFailingCallIsReportedWhenItStartsAndStopsFailing) {
  Open(MachinePath("pcie-4gpu-utilisation.json"));
  DeviceSampler sampler(*nvml_, inventory_);
  SetEnv("FAKE_NVML_FAILING", "nvmlDeviceGetUtilizationRates");
  std::vector<SampleNotice> notices;
  for (int i = 0; i < 3; ++i) {
    auto s = sampler.SampleAll(&notices);
    EXPECT_FALSE(s[1].sm_util.has_value());  // no value this pass, and no fallback for a transient error
  }
  EXPECT_EQ(Count(notices, SampleQuery::kUtilizationRates, false), 4);  // once per GPU, not per pass
  EXPECT_EQ(sampler.errors(), 12u);
  SetEnv("FAKE_NVML_FAILING", std::nullopt);
  notices.clear();
  auto s = sampler.SampleAll(&notices);
  EXPECT_EQ(s[1].sm_util, 60.0);
  EXPECT_EQ(notices.size(), 4u);  // "answers again"
  for (const auto& n : notices) EXPECT_TRUE(n.status.ok());
}

TEST_F(DeviceSamplerTest, ALostGpuHasNoValuesAndComesBackWithAFreshHandle) {
  Open(MachinePath("pcie-4gpu-utilisation.json"));
  DeviceSampler sampler(*nvml_, inventory_);
  SetEnv("FAKE_NVML_LOST_GPUS", "1");
  auto s = sampler.SampleAll(nullptr);
  EXPECT_FALSE(s[1].sm_util.has_value());
  EXPECT_EQ(s[0].sm_util, 3.0);
  SetEnv("FAKE_NVML_LOST_GPUS", std::nullopt);
  s = sampler.SampleAll(nullptr);
  EXPECT_EQ(s[1].sm_util, 60.0);
}

TEST_F(DeviceSamplerTest, GpmGivesSmActivityPerGpuAndPerMigInstanceFromTheSecondPassOn) {
  Open(Edited("a100-mig.json", [](nlohmann::json& m) {
    m["gpus"][0]["gpm"] = true;
    m["gpus"][0]["migDevices"][0]["gpmSm"] = 42;
    m["gpus"][0]["migDevices"][1]["gpmSm"] = 2;
    m["gpus"][2]["gpm"] = true;
    m["gpus"][2]["utilisation"] = {{"curve", "constant"}, {"sm", 70}};
  }));
  DeviceSampler sampler(*nvml_, inventory_);
  std::vector<SampleNotice> notices;
  auto first = sampler.SampleAll(&notices);
  // GPU 1 and its 4 MIG devices and GPUs 3-7 have no GPM: said once each.
  EXPECT_EQ(Count(notices, SampleQuery::kGpm, true), 1 + 4 + 5);
  EXPECT_FALSE(first[1].sm_active.has_value());  // one sample is not an interval yet
  notices.clear();
  auto s = sampler.SampleAll(&notices);
  EXPECT_TRUE(notices.empty());
  const DeviceSample& mig0 = s[1];
  ASSERT_TRUE(mig0.mig);
  EXPECT_EQ(mig0.sm_active, 42.0);
  EXPECT_EQ(mig0.sm_occupancy, 21.0);
  EXPECT_EQ(mig0.sm_util, 42.0);  // no utilisation rates on MIG: the SM activity stands in
  EXPECT_TRUE(mig0.sm_util_from_gpm);
  EXPECT_EQ(s[2].sm_util, 2.0);
  const DeviceSample& gpu2 = s[1 + 7 + 1 + 4];  // GPU 2, after GPU 0 + 7 MIG, GPU 1 + 4 MIG
  ASSERT_EQ(gpu2.uuid, inventory_.gpus[2].uuid.str());
  EXPECT_EQ(gpu2.sm_util, 70.0);
  EXPECT_FALSE(gpu2.sm_util_from_gpm);
  EXPECT_EQ(gpu2.sm_active, 70.0);
  EXPECT_FALSE(s[1 + 7].sm_active.has_value());  // GPU 1: no GPM
  sampler.Release();
  sampler.Release();  // idempotent
}

}  // namespace
}  // namespace phalanx::nvml
