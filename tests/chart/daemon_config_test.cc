// The configuration files the chart renders, checked by the daemons' own parsers (the code each
// daemon runs at start; both refuse unknown keys and bad values):
//   extender.yaml (scheduler ConfigMap)      -> extender::ParseConfig
//   config.yaml (device-plugin ConfigMap)    -> device-plugin/plugin/config.cc ParseConfig
// for default and non-default values and for changed values. (Flags: render_test's DaemonFlagsTest.)
#include <gtest/gtest.h>

#include <set>


#include "device-plugin/plugin/config.h"
#include "extender/config.h"
#include "tests/chart/chart_env.h"
#include "tests/chart/rendering.h"

namespace phalanx::chart_test {
namespace {

std::string ExtenderYaml(const Rendering& r) {
  return Str(r.Get("ConfigMap", std::string(kRelease) + "-scheduler-config"), {"data", "extender.yaml"});
}

void ExpectAccepted(const Rendering& r, const std::string& name, int http_timeout_seconds) {
  SCOPED_TRACE(name);
  ASSERT_TRUE(r.error.empty()) << r.error;
  const std::string yaml = ExtenderYaml(r);
  ASSERT_FALSE(yaml.empty()) << "no extender.yaml in the scheduler ConfigMap";
  auto cfg = extender::ParseConfig(yaml);
  ASSERT_TRUE(cfg.ok()) << "phalanx-extender would refuse to start: " << cfg.status() << "\n" << yaml;
  // What the chart means, as the extender understands it.
  ASSERT_EQ(cfg->tiers.size(), 4u);
  EXPECT_EQ(cfg->tiers.front().name, "critical");
  EXPECT_EQ(cfg->tiers.back().name, "spot");
  EXPECT_TRUE(cfg->tiers.back().preempts.empty()) << "phalanx-spot has preemptionPolicy Never";
  EXPECT_EQ(cfg->topology_levels.front(), "kubernetes.io/hostname");
  // The barrier ends 10 s before kube-scheduler's httpTimeout (scheduler.extender.httpTimeoutSeconds).
  EXPECT_EQ(cfg->http_timeout.count(), http_timeout_seconds);
}

TEST(ExtenderConfigTest, RenderedConfigIsAcceptedByTheExtender) {
  ExpectAccepted(Render(), "default values", 130);
  ExpectAccepted(RenderNonDefault(), "ci/nondefault-values.yaml", 300);
  const Rendering& r = Render({"--set", "extender.config.headOfLineSeconds=30", "--set",
                               "extender.config.weights.topology=5"});
  ExpectAccepted(r, "changed weights", 130);
  auto cfg = extender::ParseConfig(ExtenderYaml(r));
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ(cfg->head_of_line.count(), 30);
}

// extender.config.teamQueues reaches the extender as the values say; the defaults are the
// binary's own (an install without the key and one with the chart's defaults behave alike).
TEST(ExtenderConfigTest, TeamQueueValuesAreTheBinarysDefaultsAndReachTheExtender) {
  auto builtin = extender::ParseConfig("gangTimeoutSeconds: 120\n");
  ASSERT_TRUE(builtin.ok()) << builtin.status();
  auto def = extender::ParseConfig(ExtenderYaml(Render()));
  ASSERT_TRUE(def.ok()) << def.status();
  EXPECT_EQ(def->team_queues.cross_queue_preemption_priority, builtin->team_queues.cross_queue_preemption_priority);
  EXPECT_DOUBLE_EQ(def->team_queues.reclaim_after_s, builtin->team_queues.reclaim_after_s);
  auto nd = extender::ParseConfig(ExtenderYaml(RenderNonDefault()));
  ASSERT_TRUE(nd.ok()) << nd.status();
  EXPECT_EQ(nd->team_queues.cross_queue_preemption_priority, -1);
  EXPECT_DOUBLE_EQ(nd->team_queues.reclaim_after_s, 300);
}

std::string DevicePluginYaml(const Rendering& r) {
  return Str(r.Get("ConfigMap", std::string(kRelease) + "-device-plugin-config"), {"data", "config.yaml"});
}

TEST(DevicePluginConfigTest, RenderedConfigIsAcceptedByTheDevicePlugin) {
  for (const Rendering* r : {&Render(), &RenderNonDefault()}) {
    ASSERT_TRUE(r->error.empty()) << r->error;
    const std::string yaml = DevicePluginYaml(*r);
    ASSERT_FALSE(yaml.empty()) << "no config.yaml in the device-plugin ConfigMap";
    auto cfg = device_plugin::ParseConfig(yaml);
    ASSERT_TRUE(cfg.ok()) << "phalanx-device-plugin would refuse to start: " << cfg.status() << "\n" << yaml;
  }
  auto def = device_plugin::ParseConfig(DevicePluginYaml(Render()));
  ASSERT_TRUE(def.ok());
  EXPECT_EQ(def->mig_strategy, device_plugin::MigStrategy::kNone);
  EXPECT_EQ(def->health.ignored_xids, (std::set<unsigned long long>{13, 31, 43, 45, 68, 109}));
  auto nd = device_plugin::ParseConfig(DevicePluginYaml(RenderNonDefault()));
  ASSERT_TRUE(nd.ok());
  EXPECT_EQ(nd->mig_strategy, device_plugin::MigStrategy::kMixed);
  EXPECT_FALSE(nd->time_slicing.empty()) << "ci/nondefault-values.yaml configures time-slicing";
  EXPECT_EQ(nd->health.ignored_xids, (std::set<unsigned long long>{13, 31, 43}));
  const Rendering& x = Render({"--set", "devicePlugin.config.phalanx.ignoredXids={13,79}"});
  ASSERT_TRUE(x.error.empty()) << x.error;
  auto xc = device_plugin::ParseConfig(DevicePluginYaml(x));
  ASSERT_TRUE(xc.ok()) << xc.status();
  EXPECT_EQ(xc->health.ignored_xids, (std::set<unsigned long long>{13, 79}));
}

}  // namespace
}  // namespace phalanx::chart_test
