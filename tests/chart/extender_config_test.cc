// The extender configuration and flags the chart renders, checked by the extender's own code:
// extender.yaml from the scheduler ConfigMap goes through extender::ParseConfig (the parser
// phalanx-extender runs at start, which refuses unknown keys and bad values), for default and
// non-default values and for changed values. (Flags: render_test's DaemonFlagsTest.)
#include <gtest/gtest.h>


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

}  // namespace
}  // namespace phalanx::chart_test
