// Evictions the engine asked for that do not happen as asked (docs/algorithms.md §8.4):
// a refused eviction leaves the victim running and a candidate again, and a preemptor that
// stops waiting for its victims (they overran, it started elsewhere, it was removed) is no
// longer counted as waiting for them.
#include <gtest/gtest.h>

#include "core/scheduling/engine.h"
#include "tests/unit/core/scheduling/fake_driver.h"

namespace phalanx::scheduling {
namespace {

using testing::FakeDriver;
using testing::Gang;
using testing::kHigh;
using testing::kSpot;

EnginePolicy Policy() {
  EnginePolicy p = EnginePolicy::Defaults();
  for (TierPolicy& t : p.tiers) {
    t.reserve_after_s = 0;
    t.max_preemptions_per_day = 1;  // a second preemption of the same job today is refused
    if (t.name == "high") t.target_wait_s = 600;
  }
  EXPECT_TRUE(p.Validate().ok());
  return p;
}

// One 8-GPU node held by a spot gang that checkpoints on notice; a high gang preempts it
// gracefully at t=10 and waits for it.
class EngineEvictionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::AddRack(driver_.mutable_state(), "n", 1, "r0");
    driver_.graceful_notice = 120;
    ASSERT_TRUE(engine_.Enqueue(Gang("spot", 1, 8, kSpot, 0, 100000, true)).ok());
    engine_.Pass(0, driver_);
    driver_.risk["spot"] = 40000;  // graceful is cheaper than losing it
    ASSERT_TRUE(engine_.Enqueue(Gang("high", 1, 8, kHigh, 10, 100)).ok());
    engine_.Pass(10, driver_);
    ASSERT_EQ(driver_.evicted, std::vector<std::string>{"spot"});
    ASSERT_TRUE(engine_.IsEvicting(GangKey("spot")));
    ASSERT_EQ(engine_.awaiting_victims(), 1);
  }
  // What an 8-GPU gang ahead of every other would expect to wait (the forecast of spot's end).
  double StandardWait(double now) {
    return engine_.ExpectedWait(Gang("probe", 1, 8, testing::kCritical, now), now, driver_.state());
  }

  FakeDriver driver_;
  Engine engine_{Policy()};
};

TEST_F(EngineEvictionTest, ARefusedEvictionLeavesTheVictimRunningAndACandidateAgain) {
  EXPECT_LT(StandardWait(20), 200) << "asked to stop: expected to free its GPUs within its notice";
  engine_.OnEvictionRefused(GangKey("spot"));
  EXPECT_TRUE(engine_.IsRunning(GangKey("spot")));
  EXPECT_FALSE(engine_.IsEvicting(GangKey("spot")));
  EXPECT_EQ(engine_.stats().evictions_refused, 1u);
  // Its expected end is its own again, not the eviction's deadline.
  EXPECT_GT(StandardWait(20), 50000);
  // The refusal preempted nothing: no entry against its daily cap.
  EXPECT_EQ(engine_.PreemptionsInDay("spot", 20), 0);
  ASSERT_TRUE(engine_.VictimStanding(GangKey("spot"), 20).has_value());
  EXPECT_TRUE(engine_.VictimStanding(GangKey("spot"), 20)->eligible);
  // The preemptor no longer waits for it, and says so until the next pass.
  EXPECT_EQ(engine_.awaiting_victims(), 0);
  EXPECT_NE(engine_.WhyWaiting(GangKey("high")).find("refused"), std::string::npos)
      << engine_.WhyWaiting(GangKey("high"));
  // The next pass searches again and finds it (a candidate again, within its daily cap).
  engine_.Pass(20, driver_);
  EXPECT_EQ(driver_.evicted, (std::vector<std::string>{"spot", "spot"}));
  EXPECT_TRUE(engine_.IsEvicting(GangKey("spot")));
  EXPECT_EQ(engine_.awaiting_victims(), 1);
  // This time it stops: the preemptor starts.
  driver_.Release(GangKey("spot"));
  engine_.OnFinished(GangKey("spot"));
  engine_.Pass(140, driver_);
  EXPECT_TRUE(engine_.IsRunning(GangKey("high")));
  EXPECT_EQ(engine_.awaiting_victims(), 0);
}

TEST_F(EngineEvictionTest, ARefusalOfAGangNotBeingEvictedChangesNothing) {
  engine_.OnEvictionRefused(GangKey("nobody"));
  engine_.OnEvictionRefused(GangKey("high"));  // waiting, not running
  EXPECT_EQ(engine_.stats().evictions_refused, 0u);
  EXPECT_EQ(engine_.awaiting_victims(), 1);
  EXPECT_TRUE(engine_.IsEvicting(GangKey("spot")));
  engine_.OnEvictionRefused(GangKey("spot"));
  engine_.OnEvictionRefused(GangKey("spot"));  // reported twice: once is enough
  EXPECT_EQ(engine_.stats().evictions_refused, 1u);
}

TEST_F(EngineEvictionTest, APreemptorWhoseVictimsOverranStopsWaitingForThem) {
  // Notice 120 s + grace 60 s from t=10: at 200 it gives up waiting (the victim still runs).
  engine_.Pass(200, driver_);
  EXPECT_FALSE(engine_.IsRunning(GangKey("high")));
  EXPECT_EQ(engine_.awaiting_victims(), 0);
}

TEST_F(EngineEvictionTest, APreemptorRemovedStopsWaiting) {
  ASSERT_TRUE(engine_.Remove(GangKey("high")).ok());
  EXPECT_EQ(engine_.awaiting_victims(), 0);
}

TEST_F(EngineEvictionTest, APreemptorFoundRunningElsewhereStopsWaiting) {
  engine_.AdoptRunning(Gang("high", 1, 8, kHigh, 10, 100), "H100", {}, 40);
  EXPECT_EQ(engine_.awaiting_victims(), 0);
  // A refusal reported afterwards finds no preemptor to update.
  engine_.OnEvictionRefused(GangKey("spot"));
  EXPECT_EQ(engine_.awaiting_victims(), 0);
  EXPECT_FALSE(engine_.IsEvicting(GangKey("spot")));
}

// The GPUs a graceful victim frees are its preemptor's from the pass's start, not only
// from its own step of the walk (docs/algorithms.md §8.4). An older high gang (A) that
// expects its GPUs within its target waits without preempting; a younger one (B), behind
// it, evicts the spot gang. When the victim stops, A is walked first and used to take the
// node B paid for (B then waited for the standard gang's end too).
TEST(EngineAwaitedPoolTest, GpusFreedForAPreemptorAreNotTakenByAGangWalkedBeforeIt) {
  FakeDriver driver;
  testing::AddRack(driver.mutable_state(), "n", 2, "r0");
  driver.graceful_notice = 120;
  Engine engine{Policy()};
  ASSERT_TRUE(engine.Enqueue(Gang("standard", 1, 8, testing::kStandard, 0, 300)).ok());
  ASSERT_TRUE(engine.Enqueue(Gang("spot", 1, 8, kSpot, 0, 100000, true)).ok());
  engine.Pass(0, driver);
  driver.risk["spot"] = 40000;  // graceful is cheaper than losing it
  ASSERT_TRUE(engine.Enqueue(Gang("A", 1, 8, kHigh, 10, 100)).ok());
  engine.Pass(10, driver);
  ASSERT_TRUE(driver.evicted.empty()) << "A expects the standard gang's node at 300: within its 600 s target";
  ASSERT_TRUE(engine.Enqueue(Gang("B", 1, 8, kHigh, 20, 100)).ok());
  engine.Pass(20, driver);
  ASSERT_EQ(driver.evicted, std::vector<std::string>{"spot"});
  ASSERT_EQ(engine.awaiting_victims(), 1);
  driver.Release(GangKey("spot"));
  engine.OnFinished(GangKey("spot"));
  engine.Pass(140, driver);
  EXPECT_TRUE(engine.IsRunning(GangKey("B")));
  EXPECT_FALSE(engine.IsRunning(GangKey("A"))) << "A would end after B's start: it waits for the standard node";
  EXPECT_EQ(engine.awaiting_victims(), 0);
  driver.Release(GangKey("standard"));
  engine.OnFinished(GangKey("standard"));
  engine.Pass(300, driver);
  EXPECT_TRUE(engine.IsRunning(GangKey("A")));
  EXPECT_EQ(driver.evicted, std::vector<std::string>{"spot"});
}

}  // namespace
}  // namespace phalanx::scheduling
