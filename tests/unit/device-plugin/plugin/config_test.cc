#include "device-plugin/plugin/config.h"

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

namespace phalanx::device_plugin {
namespace {

TEST(ConfigTest, DefaultsFromMinimalDocument) {
  auto c = ParseConfig("version: v1\n");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->mig_strategy, MigStrategy::kNone);
  EXPECT_TRUE(c->fail_on_init_error);
  EXPECT_TRUE(c->HasStrategy(DeviceListStrategy::kEnvvar));
  EXPECT_FALSE(c->HasStrategy(DeviceListStrategy::kCdiCri));
  EXPECT_EQ(c->health.ignored_xids, (std::set<unsigned long long>{13, 31, 43, 45, 68, 109}));
  EXPECT_DOUBLE_EQ(c->publish_interval_seconds, 1.0);
}

TEST(ConfigTest, NvidiaStyleDocumentParses) {
  auto c = ParseConfig(R"(
version: v1
flags:
  migStrategy: mixed
  failOnInitError: false
  nvidiaDriverRoot: /run/nvidia/driver
  plugin:
    passDeviceSpecs: true
    deviceListStrategy: [envvar, cdi-cri]
    deviceIDStrategy: uuid
sharing:
  timeSlicing:
    renameByDefault: true
    failRequestsGreaterThanOne: true
    resources:
    - name: nvidia.com/gpu
      replicas: 4
    - name: nvidia.com/mig-1g.10gb
      replicas: 2
      rename: nvidia.com/mig-small
phalanx:
  health:
    ignoredXids: [13, 48]
    recoveryQuietSeconds: 60
  publishIntervalSeconds: 5
)");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->mig_strategy, MigStrategy::kMixed);
  EXPECT_FALSE(c->fail_on_init_error);
  EXPECT_TRUE(c->pass_device_specs);
  EXPECT_TRUE(c->HasStrategy(DeviceListStrategy::kCdiCri));
  EXPECT_TRUE(c->rename_by_default);
  EXPECT_TRUE(c->fail_requests_greater_than_one);
  ASSERT_EQ(c->time_slicing.size(), 2u);
  EXPECT_EQ(c->time_slicing[0].replicas, 4);
  EXPECT_EQ(c->time_slicing[1].rename, "nvidia.com/mig-small");
  EXPECT_EQ(c->health.ignored_xids, (std::set<unsigned long long>{13, 48}));
  EXPECT_EQ(c->health.recovery_quiet_seconds, 60);
  EXPECT_DOUBLE_EQ(c->publish_interval_seconds, 5);
}

struct BadCase {
  const char* yaml;
  const char* message;
};

class ConfigErrorTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(ConfigErrorTest, RejectsWithPath) {
  auto c = ParseConfig(GetParam().yaml);
  ASSERT_FALSE(c.ok()) << GetParam().yaml;
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find(GetParam().message), std::string::npos) << c.status();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ConfigErrorTest,
    ::testing::Values(
        BadCase{"", "empty document"},
        BadCase{"flags: {}\n", "version: required"},
        BadCase{"version: v2\n", "version: must be \"v1\", got \"v2\""},
        BadCase{"version: v1\nflags:\n  migStrategy: some\n", "flags.migStrategy: must be none, single or mixed"},
        BadCase{"version: v1\nflags:\n  migStratgy: mixed\n", "flags.migStratgy: unknown key"},
        BadCase{"version: v1\nflags:\n  failOnInitError: maybe\n", "flags.failOnInitError: expected true or false"},
        BadCase{"version: v1\nflags:\n  plugin:\n    deviceListStrategy: [envvar, nfs]\n",
                "flags.plugin.deviceListStrategy[1]: must be envvar"},
        BadCase{"version: v1\nflags:\n  plugin:\n    deviceIDStrategy: index\n", "only \"uuid\" is supported"},
        BadCase{"version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: amd.com/gpu\n      replicas: 2\n",
                "sharing.timeSlicing.resources[0].name: must be nvidia.com/gpu"},
        BadCase{"version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n",
                "sharing.timeSlicing.resources[0].replicas: required"},
        BadCase{"version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - {name: nvidia.com/gpu, replicas: 2}\n"
                "    - {name: nvidia.com/gpu, replicas: 3}\n",
                "resources[1].name: duplicate"},
        BadCase{"version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - {name: nvidia.com/gpu, replicas: x}\n",
                "replicas: expected an integer"},
        BadCase{"version: v1\nsharing:\n  mps: {}\n", "sharing.mps: MPS sharing is not supported"},
        BadCase{"version: v1\nphalanx:\n  health:\n    ignoredXids: 13\n", "expected a list of XIDs"},
        BadCase{"version: v1\nphalanx:\n  health:\n    recoveryQuietSeconds: -1\n", "must be between 0 and 86400"},
        BadCase{"version: v1\nphalanx:\n  publishIntervalSeconds: 0.1\n", "phalanx.publishIntervalSeconds"},
        BadCase{"version: v1\nphalanx:\n  ignoredXids: [13]\n  health:\n    ignoredXids: [31]\n", "not both"},
        BadCase{"version: v1\nphalanx:\n  ignoredXids: [0]\n", "phalanx.ignoredXids[0]: must be a positive XID"},
        BadCase{"version: v1\nflags: [\n", "line"}));

TEST(ConfigTest, ShorthandIgnoredXidsReplacesTheDefaultList) {
  auto c = ParseConfig("version: v1\nphalanx:\n  ignoredXids: [13, 48]\n");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->health.ignored_xids, (std::set<unsigned long long>{13, 48}));
}

TEST(ConfigTest, EqualitySeesEveryReloadableField) {
  auto a = ParseConfig("version: v1\n");
  ASSERT_TRUE(a.ok());
  Config b = *a;
  EXPECT_TRUE(*a == b);
  b.health.ignored_xids.insert(48);
  EXPECT_FALSE(*a == b);
  b = *a;
  b.time_slicing.push_back({.name = "nvidia.com/gpu", .replicas = 2});
  EXPECT_FALSE(*a == b);
  b = *a;
  b.mig_strategy = MigStrategy::kMixed;
  EXPECT_FALSE(*a == b);
}

// The Helm chart renders devicePlugin.config from values.yaml into the ConfigMap the
// daemon reads with --config: its defaults must pass this strict validation.
TEST(ConfigTest, HelmChartDefaultConfigIsAccepted) {
  const std::string values = std::string(PHALANX_TEST_SOURCE_DIR) + "/helm/phalanx/values.yaml";
  YAML::Node root = YAML::LoadFile(values);
  ASSERT_TRUE(root["devicePlugin"]["config"]) << values << " has no devicePlugin.config";
  YAML::Emitter out;
  out << root["devicePlugin"]["config"];
  auto c = ParseConfig(out.c_str());
  ASSERT_TRUE(c.ok()) << c.status() << "\n" << out.c_str();
  EXPECT_EQ(c->mig_strategy, MigStrategy::kNone);
  EXPECT_EQ(c->health.ignored_xids, (std::set<unsigned long long>{13, 31, 43, 45, 68, 109}));
}

TEST(ConfigTest, MissingFileIsNotFound) {
  auto c = LoadConfigFile("/nonexistent/phalanx.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kNotFound);
  EXPECT_NE(c.status().message().find("/nonexistent/phalanx.yaml"), std::string::npos);
}

}  // namespace
}  // namespace phalanx::device_plugin
