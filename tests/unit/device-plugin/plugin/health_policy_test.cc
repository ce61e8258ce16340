#include "device-plugin/health/health_policy.h"

#include <gtest/gtest.h>

#include "device-plugin/plugin/health_table.h"

namespace phalanx::device_plugin {
namespace {

nvml::NvmlEvent Xid(unsigned long long xid, std::optional<std::string> mig = std::nullopt) {
  nvml::NvmlEvent e;
  e.gpu_uuid = GpuUuid("GPU-a");
  if (mig) e.mig_uuid = GpuUuid(*mig);
  e.type = nvml::NvmlEventType::kXidCriticalError;
  e.xid = xid;
  return e;
}

TEST(HealthPolicyTest, DefaultIgnoredXidsAreApplicationFaults) {
  HealthConfig config;
  for (unsigned long long x : {13, 31, 43, 45, 68, 109}) EXPECT_FALSE(ClassifyEvent(Xid(x), config)) << x;
  for (unsigned long long x : {48, 62, 63, 64, 74, 79, 92, 94, 95, 119, 999}) {
    auto v = ClassifyEvent(Xid(x), config);
    ASSERT_TRUE(v) << x;
    EXPECT_EQ(v->device_uuid, "GPU-a");
    EXPECT_EQ(v->xid, x);
  }
  EXPECT_EQ(ClassifyEvent(Xid(79), config)->reason, "XID 79");
}

TEST(HealthPolicyTest, ConfiguredIgnoreListReplacesDefault) {
  HealthConfig config;
  config.ignored_xids = {79};
  EXPECT_FALSE(ClassifyEvent(Xid(79), config));
  EXPECT_TRUE(ClassifyEvent(Xid(13), config));
}

TEST(HealthPolicyTest, MigEventMarksOnlyTheMigDevice) {
  auto v = ClassifyEvent(Xid(94, "MIG-x"), HealthConfig{});
  ASSERT_TRUE(v);
  EXPECT_EQ(v->device_uuid, "MIG-x");
}

TEST(HealthPolicyTest, EccDoubleBitIsFatalSingleBitIsNot) {
  nvml::NvmlEvent e;
  e.gpu_uuid = GpuUuid("GPU-a");
  e.type = nvml::NvmlEventType::kDoubleBitEccError;
  auto v = ClassifyEvent(e, HealthConfig{});
  ASSERT_TRUE(v);
  EXPECT_EQ(v->reason, "double-bit ECC error");
  e.type = nvml::NvmlEventType::kSingleBitEccError;
  EXPECT_FALSE(ClassifyEvent(e, HealthConfig{}));
}

TEST(HealthTableTest, ParentGpuHealthAppliesToMigDevicesAndNotifies) {
  HealthTable t;
  int calls = 0;
  int id = t.Subscribe([&] { ++calls; });
  EXPECT_TRUE(t.Effective("MIG-1", "GPU-a").healthy);
  EXPECT_TRUE(t.SetUnhealthy("GPU-a", "XID 79", 79, MonotonicTime{}));
  EXPECT_FALSE(t.Effective("MIG-1", "GPU-a").healthy);
  EXPECT_EQ(t.Effective("MIG-1", "GPU-a").reason, "XID 79");
  EXPECT_FALSE(t.SetUnhealthy("GPU-a", "XID 79", 79, MonotonicTime{}));  // no change, no notification
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(t.SetHealthy("GPU-a"));
  EXPECT_FALSE(t.SetHealthy("GPU-a"));
  EXPECT_EQ(calls, 2);
  t.Unsubscribe(id);
  t.SetUnhealthy("GPU-b", "x", 0, MonotonicTime{});
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(t.version(), 3u);
}

}  // namespace
}  // namespace phalanx::device_plugin
