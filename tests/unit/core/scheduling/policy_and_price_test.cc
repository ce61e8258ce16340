#include <gtest/gtest.h>

#include "core/scheduling/policy_yaml.h"
#include "core/scheduling/preemption_cost.h"
#include "core/scheduling/tier_policy.h"

namespace phalanx::scheduling {
namespace {

TEST(TierPolicyTest, DefaultsAreTheFourChartTiers) {
  const EnginePolicy p = EnginePolicy::Defaults();
  EXPECT_EQ(p.TierOf(2000000).name, "critical");
  EXPECT_EQ(p.TierOf(10000).name, "high");
  EXPECT_EQ(p.TierOf(9999).name, "standard");
  EXPECT_EQ(p.TierOf(100).name, "spot");
  EXPECT_EQ(p.TierOf(-5).name, "spot");  // below every band: the lowest tier
  EXPECT_DOUBLE_EQ(p.TierOf(10000).target_wait_s, 0);
  EXPECT_LT(p.TierOf(1000).target_wait_s, 0);  // standard and spot never preempt
  EXPECT_LT(p.TierOf(100).target_wait_s, 0);
  EXPECT_DOUBLE_EQ(p.TierOf(1000000).reserve_after_s, 0);  // critical holds a reservation at once
  EXPECT_DOUBLE_EQ(p.TierOf(10000).reserve_after_s, 3600);  // high after an hour (issue 25)
  EXPECT_LT(p.TierOf(1000).reserve_after_s, 0);
  EXPECT_TRUE(p.TierOf(100).preemptible_backfill);
}

TEST(TierPolicyTest, ValidationNamesTheField) {
  EnginePolicy p = EnginePolicy::Defaults();
  p.tiers[1].weight = 0;
  EXPECT_EQ(p.Validate().message(), "tiers[1].weight: must be > 0");
  p = EnginePolicy::Defaults();
  p.tiers[2].priority = p.tiers[0].priority;
  EXPECT_NE(p.Validate().message().find("tiers[2].priority"), std::string::npos);
  p = EnginePolicy::Defaults();
  p.tiers[0].name = "";
  EXPECT_EQ(p.Validate().message(), "tiers[0].name: must not be empty");
  p = EnginePolicy::Defaults();
  p.wait_horizon_s = 0;
  EXPECT_NE(p.Validate().message().find("waitHorizonSeconds"), std::string::npos);
  EXPECT_EQ(EnginePolicy{}.Validate().message(), "tiers: at least one tier is needed");
}

TEST(PolicyYamlTest, OverridesKeepTheDefaultsOfNamedTiers) {
  auto p = ParseEnginePolicy(YAML::Load(R"(
backfill: false
preemptionSearchesPerPass: 4
calibrateDurations: false
tiers:
  - {name: critical}
  - {name: high, targetWaitSeconds: 600}
  - {name: standard, targetWaitSeconds: 7200, reserveAfterSeconds: 86400}
  - {name: batch, priority: 500, weight: 3}
  - {name: spot, preemptibleBackfill: false}
)"));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_FALSE(p->backfill);
  EXPECT_EQ(p->preemption_searches_per_pass, 4);
  EXPECT_FALSE(p->calibrate_durations);
  EXPECT_TRUE(EnginePolicy::Defaults().calibrate_durations);
  ASSERT_EQ(p->tiers.size(), 5u);
  EXPECT_EQ(p->TierOf(1000000).name, "critical");
  EXPECT_DOUBLE_EQ(p->TierOf(1000000).weight, 1000);  // kept from the defaults
  EXPECT_DOUBLE_EQ(p->TierOf(10000).target_wait_s, 600);
  EXPECT_DOUBLE_EQ(p->TierOf(1000).reserve_after_s, 86400);
  EXPECT_EQ(p->TierOf(600).name, "batch");  // sorted into its band
  EXPECT_DOUBLE_EQ(p->TierOf(600).weight, 3);
  EXPECT_FALSE(p->TierOf(100).preemptible_backfill);
  EXPECT_TRUE(ParseEnginePolicy(YAML::Node()).ok());  // absent: the defaults
}

TEST(PolicyYamlTest, BadInputNamesTheKey) {
  auto bad = [](const char* yaml) { return ParseEnginePolicy(YAML::Load(yaml)).status().message(); };
  EXPECT_EQ(bad("tiers: [{name: high, weight: heavy}]"), "scheduling.tiers[0].weight: expected a number");
  EXPECT_EQ(bad("tiers: [{name: high, weight: 0}]"), "scheduling.tiers[0].weight: must be > 0");
  EXPECT_EQ(bad("tiers: [{weight: 2}]"), "scheduling.tiers[0].name: required");
  EXPECT_NE(bad("tiers: [{name: high, colour: red}]").find("scheduling.tiers[0].colour: unknown key"), std::string::npos);
  EXPECT_NE(bad("backfil: true").find("scheduling.backfil: unknown key"), std::string::npos);
  EXPECT_EQ(bad("backfill: maybe"), "scheduling.backfill: expected true or false");
  EXPECT_EQ(bad("calibrateDurations: 2"), "scheduling.calibrateDurations: expected true or false");
  EXPECT_EQ(bad("tiers: []"), "scheduling.tiers: expected a non-empty list");
  EXPECT_EQ(bad("tiers: [{name: a, priority: 5}, {name: b, priority: 5}]"),
            "scheduling.tiers[1].priority: 5 appears twice");
  EXPECT_NE(LoadEnginePolicyFile("/nonexistent/policy.yaml").status().message().find("cannot open"), std::string::npos);
}

// The worked example of docs/algorithms.md.
TEST(PreemptionPriceTest, WorkedExample) {
  // A high 8-GPU gang that would wait 1 h; victim: a standard 8-GPU gang with 20 min of
  // work since its checkpoint that would wait 3 h for its GPUs again.
  // Its lost work counts at the preemptor's weight (100), its wait at its own (10).
  const VictimPrice victim{.gpus = 8, .weight = 10, .lost_work_weight = 100, .gpu_seconds_at_risk = 8 * 1200,
                           .expected_wait_s = 3 * 3600};
  EXPECT_DOUBLE_EQ(VictimCost(victim, 30), 100 * 9600 + 10 * 8 * (30 + 10800));  // 1,826,400
  const PreemptionPrice p = PricePreemption(8, 100, 3600, {victim}, 30);
  EXPECT_DOUBLE_EQ(p.benefit, 2880000);
  EXPECT_TRUE(p.pays());
  EXPECT_EQ(p.Describe(), "benefit 2.88e+06 > cost 1.83e+06 weighted GPU-s");
  // The same victim set for a 1-GPU high pod waiting 10 minutes does not pay.
  const PreemptionPrice small = PricePreemption(1, 100, 600, {victim}, 30);
  EXPECT_FALSE(small.pays());
  // A 256-GPU gang with nothing at risk still costs far more than the 8-GPU victim: its
  // whole footprint must wait to run again.
  const VictimPrice big{.gpus = 256, .weight = 10, .gpu_seconds_at_risk = 0, .expected_wait_s = 3600};
  EXPECT_GT(VictimCost(big, 30), 5 * VictimCost(victim, 30));
}

}  // namespace
}  // namespace phalanx::scheduling
