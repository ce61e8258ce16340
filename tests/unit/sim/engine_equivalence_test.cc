// One engine, two drivers (issue 16): the same gangs arriving and finishing at the same
// times, replayed through the simulator's `phalanx` policy and through the extender's
// admission (engine_equivalence.h), are admitted at the same instants on the same nodes.
// Here with preemption off: without duration hints (every gang's expected run time is its
// tier's default), with them (the simulator's exact run time; the extender's a
// TrainingJob's activeDeadlineSeconds set to the same), and with two team queues whose
// quotas, not the GPUs, hold gangs back (no cohort: nothing is lent, so nothing is
// reclaimed). Preemption and reclaim: engine_equivalence_preemption_test.cc.
#include <utility>

#include <gtest/gtest.h>

#include "tests/unit/sim/engine_equivalence.h"

namespace phalanx::sim::equivalence {
namespace {

// 8 nodes of 8 GPUs in 4 racks of 2, one pool: gangs of every tier and size compete.
// team-a: every even gang and the 64-GPU one; team-b: the rest.
const std::vector<GangEvent>& Scenario() {
  static const std::vector<GangEvent> kGangs = [] {
    std::vector<GangEvent> g = {
        {0, 500, 4, 8, 1000},   {0, 300, 2, 8, 1000},    {10, 200, 1, 4, 100},   {20, 900, 2, 8, 10000},
        {30, 100, 4, 8, 1000},  {40, 50, 1, 8, 1000},    {50, 400, 2, 4, 100},   {60, 700, 8, 8, 10000},
        {70, 60, 1, 2, 1000},   {80, 120, 3, 8, 1000},   {90, 30, 2, 8, 1000000}, {100, 800, 1, 8, 100},
        {400, 100, 6, 8, 1000}, {410, 90, 2, 8, 10000},  {420, 10, 1, 1, 1000},  {900, 50, 4, 8, 1000}};
    for (size_t i = 0; i < g.size(); ++i) g[i].queue = i % 2 == 0 || i == 7 ? "team-a" : "team-b";
    return g;
  }();
  return kGangs;
}

// team-a: 64 GPUs of H100, team-b: 32 GPUs; no cohort.
scheduling::QueueConfig TwoQueues() {
  scheduling::QueueConfig c;
  for (auto [name, gpus] : {std::pair{"team-a", 64}, std::pair{"team-b", 32}}) {
    scheduling::QueueSpec q;
    q.name = name;
    q.quotas.push_back({.pool = "H100", .nominal = gpus * scheduling::kMilliGpu, .borrowing_limit = std::nullopt,
                        .lending_limit = std::nullopt});
    c.queues.push_back(q);
  }
  c.default_queue = "team-a";
  EXPECT_TRUE(c.Validate().ok()) << c.Validate();
  return c;
}

// The same decisions from both drivers; how many gangs waited (the scenario must make gangs
// wait, or it compares nothing interesting).
int ExpectSameDecisions(const Variant& v) {
  const Outcome o = ExpectSameOutcome(Scenario(), v);
  EXPECT_TRUE(o.evictions.empty());
  return Waited(Scenario(), o);
}

TEST(EngineEquivalenceTest, SimulatorAndExtenderAdmitTheSameGangsAtTheSameTimesOnTheSameNodes) {
  EXPECT_GE(ExpectSameDecisions({}), 5);
}

TEST(EngineEquivalenceTest, WithDurationHintsBothDriversStillDecideAlike) {
  EXPECT_GE(ExpectSameDecisions({.hints = true}), 5);
  // The hints change decisions (backfill of work that ends before a head's start), or this
  // variant would test nothing the first one does not.
  EXPECT_NE(ThroughTheSimulator(Scenario(), {.hints = true}), ThroughTheSimulator(Scenario(), {}));
}

TEST(EngineEquivalenceTest, WithTeamQueuesBothDriversStillDecideAlike) {
  EXPECT_GE(ExpectSameDecisions({.queues = TwoQueues()}), 5);
  EXPECT_GE(ExpectSameDecisions({.hints = true, .queues = TwoQueues()}), 5);
  // team-b's quota holds some of its gangs back where the GPUs alone would not.
  EXPECT_NE(ThroughTheSimulator(Scenario(), {.queues = TwoQueues()}), ThroughTheSimulator(Scenario(), {}));
}

}  // namespace
}  // namespace phalanx::sim::equivalence

namespace phalanx::sim::equivalence {
namespace {

// Users who hint twice their run times (issue 25, DurationCalibration): 34 standard gangs
// end in half the time they said, which teaches the standard tier's ratio (0.5) in both
// drivers alike (the simulator's job ends; the extender's pods deleted after they ran).
// Then seven standard gangs fill seven nodes, a critical gang of all 64 GPUs becomes the
// head (expected start: the seven gangs' calibrated end, 200 s sooner than their hints
// say), and a spot gang whose (unlearned) hint ends between the two starts is refused
// the eighth node: it would delay the head.
const std::vector<GangEvent>& CalibrationScenario() {
  static const std::vector<GangEvent> kGangs = [] {
    std::vector<GangEvent> g;
    for (int i = 0; i < 34; ++i) g.push_back({static_cast<double>(i), 100, 1, 8, 1000});
    for (int i = 0; i < 7; ++i) g.push_back({600, 200, 1, 8, 1000});
    g.push_back({610, 50, 8, 8, 1000000});
    g.push_back({620, 150, 1, 8, 100});
    return g;
  }();
  return kGangs;
}

TEST(EngineEquivalenceTest, WithOverestimatedHintsBothDriversLearnTheSameRunTimes) {
  const Variant calibrated{.hints = true, .hint_factor = 2};
  const Outcome o = ExpectSameOutcome(CalibrationScenario(), calibrated);
  EXPECT_TRUE(o.evictions.empty());
  // The spot gang (index 42) waits for the head; without calibration it backfilled at once.
  ASSERT_TRUE(o.starts.contains(42));
  EXPECT_GT(o.starts.at(42).front().time, 620);
  const Outcome uncalibrated = ThroughTheSimulator(CalibrationScenario(), {.hints = true, .hint_factor = 2,
                                                                          .calibrate = false});
  ASSERT_TRUE(uncalibrated.starts.contains(42));
  EXPECT_DOUBLE_EQ(uncalibrated.starts.at(42).front().time, 620);
  EXPECT_NE(o, uncalibrated);
}

}  // namespace
}  // namespace phalanx::sim::equivalence
