// Idle victims first (TierPolicy::idle_victims_first, issue 18; docs/algorithms.md §8.3): an
// idle gang of a tier that sets it is the first preemption victim; off by default, and then
// nothing changes.
#include <deque>
#include <span>

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "core/scheduling/engine.h"
#include "core/scheduling/policy_yaml.h"
#include "core/scheduling/preemption_cost.h"
#include "tests/unit/core/scheduling/fake_driver.h"

namespace phalanx::scheduling {
namespace {

using testing::FakeDriver;
using testing::Gang;
using testing::kHigh;
using testing::kSpot;

EnginePolicy Policy(bool idle_victims_first) {
  EnginePolicy p = EnginePolicy::Defaults();
  for (TierPolicy& t : p.tiers) {
    t.reserve_after_s = 0;
    if (t.name == "high") t.target_wait_s = 600;
    if (t.name == "spot") t.idle_victims_first = idle_victims_first;
  }
  EXPECT_TRUE(p.Validate().ok());
  return p;
}

struct Outcome {
  std::vector<std::string> evicted;
  std::string why;
  int idle_questions = 0;
};

// Two 8-GPU spot gangs on two nodes: "busy" has nothing at risk (the cheap victim by the
// price rules), "idle" has 8 GPU-hours at risk. A high gang needs one node.
Outcome Replay(bool setting, std::set<std::string> idle) {
  FakeDriver driver;
  testing::AddRack(driver.mutable_state(), "n", 2, "r0");
  Engine engine(Policy(setting));
  EXPECT_TRUE(engine.Enqueue(Gang("busy", 1, 8, kSpot, 0, 36000)).ok());
  EXPECT_TRUE(engine.Enqueue(Gang("idle", 1, 8, kSpot, 1, 36000)).ok());
  engine.Pass(1, driver);
  EXPECT_TRUE(engine.IsRunning(GangKey("busy")) && engine.IsRunning(GangKey("idle")));
  driver.risk["busy"] = 0;
  driver.risk["idle"] = 8 * 3600;
  driver.idle = std::move(idle);
  EXPECT_TRUE(engine.Enqueue(Gang("urgent", 1, 8, kHigh, 2000, 3600)).ok());
  engine.Pass(2000, driver);
  EXPECT_TRUE(engine.IsRunning(GangKey("urgent")));
  const Admission* a = driver.AdmissionOf("urgent");
  return {driver.evicted, a ? a->why : "", driver.idle_questions};
}

TEST(IdleVictimsFirstTest, OnAnIdleSpotGangIsChosenOverACheaperLookingBusyOne) {
  const Outcome on = Replay(true, {"idle"});
  EXPECT_EQ(on.evicted, std::vector<std::string>{"idle"});
  EXPECT_NE(on.why.find("cost 0 "), std::string::npos) << on.why;  // priced at zero
}

TEST(IdleVictimsFirstTest, OffOrNothingIdleTheChoiceIsUnchanged) {
  const Outcome off = Replay(false, {"idle"});
  EXPECT_EQ(off.evicted, std::vector<std::string>{"busy"});
  EXPECT_EQ(off.idle_questions, 0) << "the driver is not asked when no tier sets idleVictimsFirst";
  const Outcome none_idle = Replay(true, {});
  EXPECT_EQ(none_idle.evicted, std::vector<std::string>{"busy"});
  EXPECT_EQ(none_idle.why, off.why);
}

TEST(IdleVictimsFirstTest, AnIdleSetAloneBeatsAnySetWithABusyVictim) {
  placement::ClusterState state(testing::StandardLevels());
  testing::AddRack(state, "n", 2, "r0");
  std::vector<VictimFacts> v;
  std::deque<PodUid> pods;  // what the facts' pods (views) name
  for (int n = 0; n < 2; ++n) {
    VictimFacts f;
    f.key = GangKey(fmt::format("g{}", n));
    f.priority = kSpot;
    f.gpus = 8;
    PodUid pod(fmt::format("g{}-0", n));
    EXPECT_TRUE(state.Allocate(pod, NodeName(fmt::format("n{}", n)), 0xFF, kSpot).ok());
    f.pods = std::span<const PodUid>(&pods.emplace_back(pod), 1);
    f.remaining_s = 36000;
    f.expected_wait_s = 3600;
    v.push_back(f);
  }
  v[0].gpu_seconds_at_risk = 0;
  v[1].gpu_seconds_at_risk = 8 * 3600;
  v[1].idle = true;
  PreemptorFacts p;
  p.spec.key = GangKey("preemptor");
  p.spec.gpus_per_member = 8;
  p.spec.pool = "H100";
  p.priority = kHigh;
  p.expected_wait_s = 36000;
  // The tier does not set it: `idle` alone changes nothing.
  auto off = ChoosePricedPreemption(Policy(false), state, p, v);
  ASSERT_TRUE(off.ok()) << off.status();
  ASSERT_TRUE(off->decision.has_value());
  EXPECT_EQ(off->decision->victims, std::vector<int>{0});
  auto on = ChoosePricedPreemption(Policy(true), state, p, v);
  ASSERT_TRUE(on.ok()) << on.status();
  ASSERT_TRUE(on->decision.has_value());
  EXPECT_EQ(on->decision->victims, std::vector<int>{1});
  EXPECT_TRUE(on->pays());
  EXPECT_DOUBLE_EQ(on->price.cost, 0);
  EXPECT_FALSE(on->graceful[1]) << "an idle gang is evicted at once: it has nothing to checkpoint for";
}

TEST(IdleVictimsFirstTest, YamlSetsItPerTierStrictly) {
  auto p = ParseEnginePolicy(YAML::Load("tiers:\n  - {name: spot, priority: 0, idleVictimsFirst: true}\n"
                                        "  - {name: standard, priority: 1000}\n"),
                             "scheduling");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->TierOf(100).idle_victims_first);
  EXPECT_FALSE(p->TierOf(1000).idle_victims_first);
  EXPECT_FALSE(EnginePolicy::Defaults().TierOf(100).idle_victims_first) << "off by default";
  auto bad = ParseEnginePolicy(YAML::Load("tiers:\n  - {name: spot, priority: 0, idleVictimsFirst: often}\n"),
                               "scheduling");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "scheduling.tiers[0].idleVictimsFirst: expected true or false");
}

}  // namespace
}  // namespace phalanx::scheduling
