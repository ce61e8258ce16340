// Queue reclaim (core/scheduling/engine/queue_reclaim.h) on its own: the quota verdict
// before placement, which victims tier preemption may take across queues, and a queue
// within its nominal quota taking back what it lent.
#include "core/scheduling/engine/queue_reclaim.h"

#include <gtest/gtest.h>

#include "tests/unit/core/scheduling/engine_parts_builders.h"

namespace phalanx::scheduling {
namespace {

using testing::AddRunning;
using testing::AddWaiting;
using testing::ContextAt;
using testing::FakeDriver;
using testing::Gang;
using testing::kCritical;
using testing::kStandard;

constexpr Milli G = kMilliGpu;

// Two teams of 8 GPUs each in one cohort; `borrowing`: beyond nominal (nullopt: no limit).
QueueConfig TwoTeams(std::optional<Milli> borrowing, double reclaim_after_s = 0) {
  QueueConfig c;
  c.queues = {
      {.name = "team-a", .cohort = "org", .weight = 1, .parent = "", .quotas = {{"H100", 8 * G, borrowing, {}}}},
      {.name = "team-b", .cohort = "org", .weight = 1, .parent = "", .quotas = {{"H100", 8 * G, borrowing, {}}}}};
  c.default_queue = "team-a";
  c.reclaim_after_s = reclaim_after_s;
  EXPECT_TRUE(c.Validate().ok());
  return c;
}

GangRequest Team(const std::string& key, const std::string& queue, int priority, double submitted,
                 double hint = 36000) {
  GangRequest g = Gang(key, 1, 8, priority, submitted, hint);
  g.queue = queue;
  return g;
}

struct Parts {
  explicit Parts(QueueConfig q) : state(EnginePolicy::Defaults(), std::move(q)) {
    testing::AddRack(driver.mutable_state(), "n", 2, "r0");
  }
  EngineState state;
  AdmissionOrder order{state};
  TierPreemption preemption{state};
  QueueReclaim reclaim{state};
  FakeDriver driver;
};

TEST(QueueReclaimTest, AGangItsQueueHasNoRoomForWaitsWithTheQueuesReason) {
  Parts p(TwoTeams(/*borrowing=*/0));
  AddRunning(p.state, p.driver, Team("a-run", "team-a", kStandard, 0), {"n0"}, 0);
  WaitingGang& a1 = AddWaiting(p.state, Team("a1", "team-a", kStandard, 1));
  WaitingGang& b1 = AddWaiting(p.state, Team("b1", "team-b", kStandard, 1));
  PassContext ctx = ContextAt(10, p.driver, p.order);
  EXPECT_FALSE(p.reclaim.QuotaFor(a1, ctx).has_value());
  EXPECT_NE(a1.why.find("team-a"), std::string::npos) << a1.why;
  EXPECT_EQ(p.reclaim.QuotaFor(b1, ctx), QueueLedger::Fit::kWithinNominal);
}

TEST(QueueReclaimTest, TierPreemptionAcrossQueuesTakesOnlyBorrowedCapacity) {
  Parts p(TwoTeams(std::nullopt));
  const RunningGang& own = AddRunning(p.state, p.driver, Team("a-run", "team-a", kStandard, 0), {"n0"}, 0);
  const RunningGang& lent = AddRunning(p.state, p.driver, Team("a-borrow", "team-a", kStandard, 10), {"n1"}, 10);
  const int team_a = p.state.ledger.ResolveIndex("team-a");
  const int team_b = p.state.ledger.ResolveIndex("team-b");
  const GangRequest preemptor = Team("b1", "team-b", kStandard + 1, 20);
  EXPECT_TRUE(p.reclaim.AllowsVictim(own, Team("a1", "team-a", kStandard + 1, 20), team_a));  // its own queue
  EXPECT_FALSE(p.reclaim.AllowsVictim(own, preemptor, team_b));  // within team-a's nominal quota
  EXPECT_TRUE(p.reclaim.AllowsVictim(lent, preemptor, team_b));  // borrowed
  EXPECT_TRUE(p.reclaim.AllowsVictim(own, Team("crit", "team-b", kCritical, 20), team_b));
}

TEST(QueueReclaimTest, AQueueWithinNominalTakesBackWhatItLent) {
  Parts p(TwoTeams(std::nullopt));
  AddRunning(p.state, p.driver, Team("a-run", "team-a", kStandard, 0), {"n0"}, 0);
  AddRunning(p.state, p.driver, Team("a-borrow", "team-a", kStandard, 10), {"n1"}, 10);
  WaitingGang& b1 = AddWaiting(p.state, Team("b1", "team-b", kStandard, 20));
  b1.since = 20;
  PassContext ctx = ContextAt(30, p.driver, p.order);
  std::optional<ChosenPreemption> chosen = p.reclaim.Choose(b1, p.preemption, ctx);
  ASSERT_TRUE(chosen.has_value());
  ASSERT_EQ(chosen->decision.victims.size(), 1u);
  EXPECT_EQ(chosen->keys[static_cast<size_t>(chosen->decision.victims[0])], GangKey("a-borrow"));
  EXPECT_EQ(chosen->reason.rfind(fmt::format("{} for b1", kQueueReclaimReason), 0), 0u) << chosen->reason;
  EXPECT_EQ(p.state.stats.queue_reclaims, 1u);
}

TEST(QueueReclaimTest, WaitsOutItsPatienceWhenLentGpusAreExpectedBackSoon) {
  Parts p(TwoTeams(std::nullopt, /*reclaim_after_s=*/3600));
  AddRunning(p.state, p.driver, Team("a-run", "team-a", kStandard, 0), {"n0"}, 0);
  AddRunning(p.state, p.driver, Team("a-borrow", "team-a", kStandard, 10, /*hint=*/600), {"n1"}, 10);
  WaitingGang& b1 = AddWaiting(p.state, Team("b1", "team-b", kStandard, 20));
  b1.since = 20;
  PassContext ctx = ContextAt(30, p.driver, p.order);
  EXPECT_FALSE(p.reclaim.Choose(b1, p.preemption, ctx).has_value());
  EXPECT_EQ(p.state.next_wake, 20 + 3600);  // a pass is due when its patience runs out
  PassContext later = ContextAt(20 + 3600, p.driver, p.order);
  EXPECT_TRUE(p.reclaim.Choose(b1, p.preemption, later).has_value());
}

}  // namespace
}  // namespace phalanx::scheduling
