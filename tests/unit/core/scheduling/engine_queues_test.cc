// The scheduling engine with team queues (docs/user-guide.md §7 "Queues and quotas"): quota before
// placement, queue order by nominal then weighted share, borrowing of unused cohort
// capacity, reclaim of lent GPUs (whole gangs, graceful where cheaper, never work within
// its own queue's nominal), and tier preemption across queues only on borrowed capacity.
#include <gtest/gtest.h>

#include <algorithm>

#include <fmt/format.h>

#include "core/scheduling/engine.h"
#include "tests/unit/core/scheduling/fake_driver.h"

namespace phalanx::scheduling {
namespace {

using testing::FakeDriver;
using testing::kCritical;
using testing::kHigh;
using testing::kSpot;
using testing::kStandard;

constexpr Milli G = kMilliGpu;

// Two teams of one 8-GPU node each, one cohort; two nodes in the cluster.
QueueConfig TwoTeams(std::optional<Milli> borrowing = std::nullopt) {
  QueueConfig c;
  c.queues = {{.name = "team-a", .cohort = "org", .weight = 1, .parent = "", .quotas = {{"H100", 8 * G, borrowing, {}}}},
              {.name = "team-b", .cohort = "org", .weight = 1, .parent = "", .quotas = {{"H100", 8 * G, borrowing, {}}}}};
  c.default_queue = "team-a";
  EXPECT_TRUE(c.Validate().ok());
  return c;
}

EnginePolicy Rules() {
  EnginePolicy p = EnginePolicy::Defaults();
  for (TierPolicy& t : p.tiers) t.max_preemptions_per_day = 3;
  EXPECT_TRUE(p.Validate().ok());
  return p;
}

GangRequest Team(const std::string& key, const std::string& queue, int members, int gpus, int priority, double submitted,
                 bool checkpoints = false) {
  GangRequest g = testing::Gang(key, members, gpus, priority, submitted, 36000, checkpoints);
  g.queue = queue;
  return g;
}

class EngineQueuesTest : public ::testing::Test {
 protected:
  explicit EngineQueuesTest(QueueConfig q = TwoTeams()) : engine_(Rules(), std::move(q)) {
    testing::AddRack(driver_.mutable_state(), "n", 2, "r0");
  }
  void Finish(const std::string& key) {
    driver_.Release(GangKey(key));
    engine_.OnFinished(GangKey(key));
  }
  bool Started(const std::string& key) const { return engine_.IsRunning(GangKey(key)); }
  std::string Why(const std::string& key) const { return engine_.WhyWaiting(GangKey(key)); }

  FakeDriver driver_;
  Engine engine_;
};

TEST_F(EngineQueuesTest, AQueueBorrowsWhatItsCohortDoesNotUse) {
  ASSERT_TRUE(engine_.Enqueue(Team("a1", "team-a", 1, 8, kStandard, 0)).ok());
  ASSERT_TRUE(engine_.Enqueue(Team("a2", "team-a", 1, 8, kStandard, 1)).ok());
  ASSERT_TRUE(engine_.Enqueue(Team("a3", "team-a", 1, 4, kStandard, 2)).ok());
  engine_.Pass(10, driver_);
  EXPECT_TRUE(Started("a1"));
  EXPECT_TRUE(Started("a2"));  // team-b's 8, lent
  EXPECT_FALSE(Started("a3"));
  EXPECT_EQ(Why("a3"), "queue team-a is at 16/8 nominal GPUs of H100 and its cohort org has none to lend");
  EXPECT_EQ(engine_.queues().Usage("team-a", "H100"), 16 * G);
  EXPECT_EQ(engine_.queues().UsageOf("team-b", "H100").lent, 8 * G);
  EXPECT_EQ(engine_.queues().Borrowing(), std::vector<GangKey>{GangKey("a2")});
}

TEST_F(EngineQueuesTest, NoRoomInQuotaHoldsNothingBack) {
  // team-a at its quota (no borrowing allowed) waits, and does not become a head that
  // would keep team-b's smaller gang out.
  Engine engine(Rules(), TwoTeams(/*borrowing=*/0));
  ASSERT_TRUE(engine.Enqueue(Team("a1", "team-a", 1, 8, kHigh, 0)).ok());
  ASSERT_TRUE(engine.Enqueue(Team("a2", "team-a", 1, 8, kHigh, 1)).ok());
  ASSERT_TRUE(engine.Enqueue(Team("b1", "team-b", 1, 4, kStandard, 2)).ok());
  engine.Pass(10, driver_);
  EXPECT_TRUE(engine.IsRunning(GangKey("a1")));
  EXPECT_FALSE(engine.IsRunning(GangKey("a2")));
  EXPECT_TRUE(engine.IsRunning(GangKey("b1")));
  EXPECT_TRUE(engine.Heads().empty());
  EXPECT_EQ(engine.WhyWaiting(GangKey("a2")),
            "queue team-a is at 8/8 nominal GPUs of H100 and may borrow at most 0 beyond it; this gang needs 8");
}

// A queue with no quota room for most of its waiting gangs: the pass skips runs of them
// (engine/admission_order_quota.cc) but every gang keeps the reason a walk gives it, in this pass and
// the next, after the ledger changes, and after SetQueues; a small gang between the runs
// that fits still starts in its turn.
TEST_F(EngineQueuesTest, GangsWithoutRoomKeepTheirReasonsAndSmallerOnesStillStart) {
  Engine engine(Rules(), TwoTeams(/*borrowing=*/0));
  ASSERT_TRUE(engine.Enqueue(Team("a0", "team-a", 1, 6, kStandard, 0)).ok());
  for (int i = 1; i <= 6; ++i) ASSERT_TRUE(engine.Enqueue(Team(fmt::format("a{}", i), "team-a", 1, 4, kStandard, i)).ok());
  ASSERT_TRUE(engine.Enqueue(Team("s7", "team-a", 1, 2, kStandard, 7)).ok());
  ASSERT_TRUE(engine.Enqueue(Team("a8", "team-a", 1, 8, kStandard, 8)).ok());
  engine.Pass(10, driver_);
  EXPECT_TRUE(engine.IsRunning(GangKey("a0")));
  EXPECT_TRUE(engine.IsRunning(GangKey("s7")));  // 2 GPUs of room after a0, behind six that need 4
  const std::string full = "queue team-a is at 8/8 nominal GPUs of H100 and may borrow at most 0 beyond it; this gang needs ";
  const std::string before = "queue team-a is at 6/8 nominal GPUs of H100 and may borrow at most 0 beyond it; this gang needs 4";
  for (int i = 1; i <= 6; ++i) EXPECT_EQ(engine.WhyWaiting(GangKey(fmt::format("a{}", i))), before) << i;
  EXPECT_EQ(engine.WhyWaiting(GangKey("a8")), full + "8");
  // Nothing changed: the next passes skip the whole queue, with the same reasons.
  engine.Pass(20, driver_, Engine::Scope::kArrivalsOnly);
  engine.Pass(30, driver_);
  for (int i = 1; i <= 6; ++i) EXPECT_EQ(engine.WhyWaiting(GangKey(fmt::format("a{}", i))), full + "4") << i;
  EXPECT_EQ(engine.WhyWaiting(GangKey("a8")), full + "8");
  // A late arrival is walked (and refused) in its first pass like any other.
  ASSERT_TRUE(engine.Enqueue(Team("a9", "team-a", 1, 1, kStandard, 9)).ok());
  EXPECT_EQ(engine.WhyWaiting(GangKey("a9")), "");
  engine.Pass(40, driver_, Engine::Scope::kArrivalsOnly);
  EXPECT_EQ(engine.WhyWaiting(GangKey("a9")), full + "1");
  // s7 ends: a9 (1 GPU) fits behind the 4-GPU ones, which keep their reason.
  driver_.Release(GangKey("s7"));
  engine.OnFinished(GangKey("s7"));
  engine.Pass(50, driver_);
  EXPECT_TRUE(engine.IsRunning(GangKey("a9")));
  EXPECT_EQ(engine.WhyWaiting(GangKey("a3")),
            "queue team-a is at 6/8 nominal GPUs of H100 and may borrow at most 0 beyond it; this gang needs 4");
  // New queues: the reasons given under the old ones stay until the next pass.
  ASSERT_TRUE(engine.SetQueues(TwoTeams(/*borrowing=*/0)).ok());
  EXPECT_EQ(engine.WhyWaiting(GangKey("a3")),
            "queue team-a is at 6/8 nominal GPUs of H100 and may borrow at most 0 beyond it; this gang needs 4");
  EXPECT_EQ(engine.WhyWaiting(GangKey("a8")),  // refused before a9 started
            "queue team-a is at 6/8 nominal GPUs of H100 and may borrow at most 0 beyond it; this gang needs 8");
  engine.Pass(60, driver_);
  EXPECT_EQ(engine.WhyWaiting(GangKey("a8")),
            "queue team-a is at 7/8 nominal GPUs of H100 and may borrow at most 0 beyond it; this gang needs 8");
}

TEST_F(EngineQueuesTest, AQueueBelowNominalIsServedBeforeABorrower) {
  // One node of room; team-a (already at its nominal) submitted first, team-b later:
  // team-b's gang runs within its nominal, so it goes first.
  ASSERT_TRUE(engine_.Enqueue(Team("a1", "team-a", 1, 8, kStandard, 0)).ok());
  engine_.Pass(0, driver_);
  ASSERT_TRUE(Started("a1"));
  ASSERT_TRUE(engine_.Enqueue(Team("a2", "team-a", 1, 8, kHigh, 1)).ok());
  ASSERT_TRUE(engine_.Enqueue(Team("b1", "team-b", 1, 8, kStandard, 5)).ok());
  engine_.Pass(10, driver_);
  EXPECT_TRUE(Started("b1"));
  EXPECT_FALSE(Started("a2"));
}

TEST_F(EngineQueuesTest, LowestWeightedShareGoesFirst) {
  QueueConfig q = TwoTeams();
  q.queues[0].quotas[0].nominal = 0;  // both borrow everything they run
  q.queues[1].quotas[0].nominal = 0;
  q.queues.push_back({.name = "pool-owner", .cohort = "org", .weight = 1, .parent = "", .quotas = {{"H100", 16 * G, {}, {}}}});
  q.queues[1].weight = 3;
  Engine engine(Rules(), q);
  // team-a already holds 4 GPUs (share 4/16 = 0.25); team-b holds 8 at weight 3
  // (8/16/3 = 0.17): team-b's next gang goes first although submitted later.
  ASSERT_TRUE(engine.Enqueue(Team("a0", "team-a", 1, 4, kStandard, 0)).ok());
  ASSERT_TRUE(engine.Enqueue(Team("b0", "team-b", 1, 8, kStandard, 0)).ok());
  engine.Pass(0, driver_);
  ASSERT_TRUE(engine.IsRunning(GangKey("a0")) && engine.IsRunning(GangKey("b0")));
  ASSERT_TRUE(engine.Enqueue(Team("a1", "team-a", 1, 4, kStandard, 1)).ok());
  ASSERT_TRUE(engine.Enqueue(Team("b1", "team-b", 1, 4, kStandard, 2)).ok());
  engine.Pass(10, driver_);
  EXPECT_TRUE(engine.IsRunning(GangKey("b1")));
  EXPECT_FALSE(engine.IsRunning(GangKey("a1")));
}

TEST_F(EngineQueuesTest, ReclaimEvictsTheBorrowedGangWithinOnePass) {
  ASSERT_TRUE(engine_.Enqueue(Team("a1", "team-a", 1, 8, kStandard, 0)).ok());
  ASSERT_TRUE(engine_.Enqueue(Team("a2", "team-a", 1, 8, kStandard, 1)).ok());
  engine_.Pass(0, driver_);
  ASSERT_TRUE(Started("a1") && Started("a2"));
  // team-b's gang, same tier, arrives: its nominal is lent to a2.
  ASSERT_TRUE(engine_.Enqueue(Team("b1", "team-b", 1, 8, kStandard, 100)).ok());
  engine_.Pass(100, driver_);
  EXPECT_TRUE(Started("b1"));
  EXPECT_EQ(driver_.evicted, std::vector<std::string>{"a2"});  // never a1, within team-a's nominal
  EXPECT_TRUE(Started("a1"));
  EXPECT_NE(driver_.last_reason.find("queue team-b reclaims its nominal quota of H100"), std::string::npos)
      << driver_.last_reason;
  EXPECT_EQ(engine_.stats().queue_reclaims, 1u);
  EXPECT_TRUE(engine_.queues().Borrowing().empty());
}

TEST_F(EngineQueuesTest, ReclaimGivesACheckpointingBorrowerNotice) {
  driver_.graceful_notice = 120;
  ASSERT_TRUE(engine_.Enqueue(Team("a1", "team-a", 1, 8, kStandard, 0, true)).ok());
  ASSERT_TRUE(engine_.Enqueue(Team("a2", "team-a", 1, 8, kStandard, 1, true)).ok());
  engine_.Pass(0, driver_);
  driver_.risk["a2"] = 8 * 3600;  // an hour since its checkpoint: cheaper to wait 120 s
  ASSERT_TRUE(engine_.Enqueue(Team("b1", "team-b", 1, 8, kStandard, 100)).ok());
  engine_.Pass(100, driver_);
  EXPECT_EQ(driver_.evicted, std::vector<std::string>{"a2"});
  EXPECT_FALSE(Started("b1"));
  EXPECT_NE(Why("b1").find("to checkpoint and stop"), std::string::npos) << Why("b1");
  engine_.Pass(150, driver_);
  EXPECT_EQ(driver_.evicted.size(), 1u);  // waits for it, evicts nobody else
  Finish("a2");
  engine_.Pass(200, driver_);
  EXPECT_TRUE(Started("b1"));
  EXPECT_TRUE(Started("a1"));
}

TEST_F(EngineQueuesTest, UnusedQuotaItsOwnWaitingWorkCoversIsNotLent) {
  // Node n1 has 4 GPUs held by a pod the engine does not know: team-b's 8-GPU gang
  // (within its nominal) cannot start yet. team-a, at its nominal, would borrow those 4
  // free GPUs — and team-b would reclaim them the moment its gang fits. They stay free.
  ASSERT_TRUE(driver_.mutable_state().Allocate(PodUid("foreign"), NodeName("n1"), placement::AllGpus(4), 0).ok());
  ASSERT_TRUE(engine_.Enqueue(Team("a1", "team-a", 1, 8, kStandard, 0)).ok());
  engine_.Pass(0, driver_);
  ASSERT_TRUE(Started("a1"));
  ASSERT_TRUE(engine_.Enqueue(Team("b1", "team-b", 1, 8, kStandard, 10)).ok());
  ASSERT_TRUE(engine_.Enqueue(Team("a2", "team-a", 1, 4, kStandard, 5)).ok());
  engine_.Pass(10, driver_);
  EXPECT_FALSE(Started("b1"));
  EXPECT_FALSE(Started("a2"));
  EXPECT_EQ(Why("a2"), "queue team-a is at 8/8 nominal GPUs of H100 and its cohort org has none to lend");
  ASSERT_TRUE(driver_.mutable_state().Release(PodUid("foreign")).ok());
  engine_.Pass(20, driver_);
  EXPECT_TRUE(Started("b1"));
  EXPECT_TRUE(driver_.evicted.empty());
  // With nothing of team-b waiting, team-a borrows again.
  ASSERT_TRUE(engine_.Remove(GangKey("a2")).ok());
  Finish("b1");
  ASSERT_TRUE(engine_.Enqueue(Team("a3", "team-a", 1, 4, kStandard, 30)).ok());
  engine_.Pass(30, driver_);
  EXPECT_TRUE(Started("a3"));
}

TEST_F(EngineQueuesTest, NoReclaimBeyondTheReclaimersNominal) {
  // team-b asks for more than its nominal: it would borrow, so it takes nothing back.
  ASSERT_TRUE(engine_.Enqueue(Team("a1", "team-a", 1, 8, kStandard, 0)).ok());
  ASSERT_TRUE(engine_.Enqueue(Team("a2", "team-a", 1, 8, kStandard, 1)).ok());
  engine_.Pass(0, driver_);
  ASSERT_TRUE(engine_.Enqueue(Team("b1", "team-b", 2, 8, kStandard, 100)).ok());
  engine_.Pass(100, driver_);
  EXPECT_FALSE(Started("b1"));
  EXPECT_TRUE(driver_.evicted.empty());
}

TEST_F(EngineQueuesTest, TierPreemptionAcrossQueuesTakesOnlyBorrowedCapacity) {
  QueueConfig q = TwoTeams();
  q.queues[1].quotas[0].nominal = 16 * G;  // quota room for team-b, no GPUs
  Engine engine(Rules(), q);
  ASSERT_TRUE(engine.Enqueue(Team("a1", "team-a", 1, 8, kSpot, 0)).ok());
  ASSERT_TRUE(engine.Enqueue(Team("b1", "team-b", 1, 8, kStandard, 0)).ok());
  engine.Pass(0, driver_);
  ASSERT_TRUE(engine.IsRunning(GangKey("a1")) && engine.IsRunning(GangKey("b1")));
  // team-a's spot gang is the cheapest victim, but it runs within team-a's nominal:
  // the high gang takes its own queue's standard gang instead.
  ASSERT_TRUE(engine.Enqueue(Team("b2", "team-b", 1, 8, kHigh, 10)).ok());
  engine.Pass(10, driver_);
  EXPECT_TRUE(engine.IsRunning(GangKey("b2")));
  EXPECT_EQ(driver_.evicted, std::vector<std::string>{"b1"});
}

TEST_F(EngineQueuesTest, TierPreemptionMayTakeABorrowedGangOfAnotherQueue) {
  QueueConfig q = TwoTeams();
  q.queues[0].quotas[0].nominal = 0;  // team-a runs only on borrowed capacity
  q.queues.push_back({.name = "owner", .cohort = "org", .weight = 1, .parent = "", .quotas = {{"H100", 16 * G, {}, {}}}});
  Engine engine(Rules(), q);
  ASSERT_TRUE(engine.Enqueue(Team("a1", "team-a", 1, 8, kSpot, 0)).ok());
  ASSERT_TRUE(engine.Enqueue(Team("b1", "team-b", 1, 8, kStandard, 0)).ok());
  engine.Pass(0, driver_);
  ASSERT_TRUE(engine.IsRunning(GangKey("a1")) && engine.IsRunning(GangKey("b1")));
  // b2 borrows too (beyond team-b's 8): no reclaim, but tier preemption may take a1.
  ASSERT_TRUE(engine.Enqueue(Team("b2", "team-b", 1, 8, kHigh, 10)).ok());
  engine.Pass(10, driver_);
  EXPECT_TRUE(engine.IsRunning(GangKey("b2")));
  EXPECT_EQ(driver_.evicted, std::vector<std::string>{"a1"});
  EXPECT_EQ(engine.stats().queue_reclaims, 0u);
}

TEST_F(EngineQueuesTest, ReclaimNeverTakesWorkWithinItsQueuesNominal) {
  ASSERT_TRUE(engine_.Enqueue(Team("a1", "team-a", 1, 8, kSpot, 0)).ok());
  ASSERT_TRUE(engine_.Enqueue(Team("b1", "team-b", 1, 8, kSpot, 0)).ok());
  engine_.Pass(0, driver_);
  // team-b's next gang is beyond its nominal, team-a's spot gang within team-a's: nothing
  // may be evicted for it, whatever its tier.
  ASSERT_TRUE(engine_.Enqueue(Team("b2", "team-b", 1, 8, kHigh, 10)).ok());
  engine_.Pass(10, driver_);
  EXPECT_FALSE(Started("b2"));
  EXPECT_TRUE(driver_.evicted.empty());
}

TEST_F(EngineQueuesTest, CriticalTierPreemptsAcrossQueuesByPolicy) {
  ASSERT_TRUE(engine_.Enqueue(Team("a1", "team-a", 1, 8, kSpot, 0)).ok());
  ASSERT_TRUE(engine_.Enqueue(Team("b1", "team-b", 1, 8, kSpot, 0)).ok());
  engine_.Pass(0, driver_);
  QueueConfig q = TwoTeams();
  q.queues[1].quotas[0].nominal = 16 * G;  // room in quota, none in the cluster
  ASSERT_TRUE(engine_.SetQueues(q).ok());
  ASSERT_TRUE(engine_.Enqueue(Team("c", "team-b", 1, 8, kCritical, 10)).ok());
  engine_.Pass(10, driver_);
  EXPECT_TRUE(Started("c"));
  ASSERT_EQ(driver_.evicted.size(), 1u);
}

TEST_F(EngineQueuesTest, CriticalAcrossQueuesCanBeTurnedOff) {
  QueueConfig q = TwoTeams();
  q.queues[1].quotas[0].nominal = 16 * G;
  q.cross_queue_preemption_priority = -1;
  Engine engine(Rules(), q);
  ASSERT_TRUE(engine.Enqueue(Team("a1", "team-a", 1, 8, kSpot, 0)).ok());
  ASSERT_TRUE(engine.Enqueue(Team("b1", "team-b", 1, 8, kSpot, 0)).ok());
  engine.Pass(0, driver_);
  ASSERT_TRUE(engine.Enqueue(Team("c", "team-b", 1, 8, kCritical, 10)).ok());
  engine.Pass(10, driver_);
  // Only team-b's own spot gang may go.
  EXPECT_TRUE(engine.IsRunning(GangKey("c")));
  EXPECT_EQ(driver_.evicted, std::vector<std::string>{"b1"});
}

TEST_F(EngineQueuesTest, WorkNamingNoQueueRunsInTheDefaultQueue) {
  ASSERT_TRUE(engine_.Enqueue(Team("x", "", 1, 8, kStandard, 0)).ok());
  ASSERT_TRUE(engine_.Enqueue(Team("y", "nobody", 1, 4, kStandard, 0)).ok());
  engine_.Pass(0, driver_);
  EXPECT_EQ(engine_.queues().Usage("team-a", "H100"), 12 * G);
}

TEST_F(EngineQueuesTest, SetQueuesReassignsRunningGangsAndRejectsBadConfig) {
  ASSERT_TRUE(engine_.Enqueue(Team("b1", "team-b", 1, 8, kStandard, 0)).ok());
  engine_.Pass(0, driver_);
  QueueConfig bad = TwoTeams();
  bad.queues[0].weight = -1;
  Status s = engine_.SetQueues(bad);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("queues[0].weight"), std::string::npos);
  EXPECT_EQ(engine_.queues().Usage("team-b", "H100"), 8 * G);  // unchanged
  QueueConfig renamed = TwoTeams();
  renamed.queues[1].name = "team-c";
  ASSERT_TRUE(engine_.SetQueues(renamed).ok());
  EXPECT_EQ(engine_.queues().Usage("team-a", "H100"), 8 * G);  // "team-b" is unknown now: default
  ASSERT_TRUE(engine_.SetQueues({}).ok());
  EXPECT_FALSE(engine_.queues().enabled());
}

TEST_F(EngineQueuesTest, AnyPoolGangIsCheckedInThePoolItLandsIn) {
  testing::AddRack(driver_.mutable_state(), "l", 1, "r1", 4, "L40S");
  QueueConfig q = TwoTeams(/*borrowing=*/0);
  Engine engine(Rules(), q);
  ASSERT_TRUE(engine.Enqueue(Team("a1", "team-a", 1, 8, kStandard, 0)).ok());
  engine.Pass(0, driver_);
  // team-a is full on H100; L40S is not managed by queues, so an any-pool gang runs there.
  GangRequest any = Team("a2", "team-a", 1, 4, kStandard, 1);
  any.pool = "";
  ASSERT_TRUE(engine.Enqueue(any).ok());
  engine.Pass(10, driver_);
  ASSERT_TRUE(engine.IsRunning(GangKey("a2")));
  EXPECT_EQ(driver_.AdmissionOf("a2")->pool, "L40S");
}

// Quota reasons are formatted once per (queue, pool, amount) while the ledger is
// unchanged: an admission in between must give the next gang the new usage.
TEST_F(EngineQueuesTest, QuotaReasonsFollowUsageWithinAPass) {
  Engine engine(Rules(), TwoTeams(/*borrowing=*/0));
  ASSERT_TRUE(engine.Enqueue(Team("a0", "team-a", 1, 6, kStandard, 0)).ok());
  engine.Pass(10, driver_);
  ASSERT_TRUE(engine.IsRunning(GangKey("a0")));
  ASSERT_TRUE(engine.Enqueue(Team("x", "team-a", 1, 4, kStandard, 1)).ok());
  ASSERT_TRUE(engine.Enqueue(Team("y", "team-a", 1, 2, kStandard, 2)).ok());
  ASSERT_TRUE(engine.Enqueue(Team("z", "team-a", 1, 4, kStandard, 3)).ok());
  engine.Pass(20, driver_);
  EXPECT_TRUE(engine.IsRunning(GangKey("y")));  // within nominal: 6 + 2 = 8
  EXPECT_EQ(engine.WhyWaiting(GangKey("x")),
            "queue team-a is at 6/8 nominal GPUs of H100 and may borrow at most 0 beyond it; this gang needs 4");
  EXPECT_EQ(engine.WhyWaiting(GangKey("z")),
            "queue team-a is at 8/8 nominal GPUs of H100 and may borrow at most 0 beyond it; this gang needs 4");
}

// Queue indexes are the new ledger's after SetQueues: waiting gangs move to their new
// queues and are checked against the new quotas.
TEST_F(EngineQueuesTest, SetQueuesReindexesWaitingAndRunningGangs) {
  ASSERT_TRUE(engine_.Enqueue(Team("a1", "team-a", 1, 8, kStandard, 0)).ok());
  engine_.Pass(10, driver_);
  ASSERT_TRUE(Started("a1"));
  ASSERT_TRUE(engine_.Enqueue(Team("c1", "team-c", 1, 8, kStandard, 1)).ok());  // unknown: team-a
  QueueConfig c = TwoTeams(/*borrowing=*/0);
  c.queues.insert(c.queues.begin(), {.name = "team-c", .cohort = "", .weight = 1, .parent = "",
                                     .quotas = {{"H100", 4 * G, std::optional<Milli>(0), {}}}});
  ASSERT_TRUE(engine_.SetQueues(c).ok());
  EXPECT_EQ(engine_.queues().Usage("team-a", "H100"), 8 * G);
  engine_.Pass(20, driver_);
  EXPECT_FALSE(Started("c1"));
  EXPECT_EQ(Why("c1"), "queue team-c is at 0/4 nominal GPUs of H100 and may borrow at most 0 beyond it; this gang needs 8");
}

// The engine keeps each reclaim search's candidates (their running records) while the
// ledger is unchanged: after gangs end and others start, a reclaim takes the gang that
// borrows now.
TEST_F(EngineQueuesTest, ReclaimTakesTheGangThatBorrowsNow) {
  ASSERT_TRUE(engine_.Enqueue(Team("a1", "team-a", 1, 8, kStandard, 0)).ok());
  ASSERT_TRUE(engine_.Enqueue(Team("a2", "team-a", 1, 8, kStandard, 1)).ok());
  engine_.Pass(10, driver_);
  ASSERT_TRUE(Started("a2"));  // team-b's 8, lent
  ASSERT_TRUE(engine_.Enqueue(Team("b1", "team-b", 1, 8, kStandard, 2)).ok());
  engine_.Pass(20, driver_);
  EXPECT_TRUE(Started("b1"));
  EXPECT_EQ(driver_.evicted, std::vector<std::string>{"a2"});
  Finish("b1");
  ASSERT_TRUE(engine_.Enqueue(Team("a3", "team-a", 1, 4, kStandard, 3)).ok());
  ASSERT_TRUE(engine_.Enqueue(Team("a4", "team-a", 1, 4, kStandard, 4)).ok());
  engine_.Pass(30, driver_);
  ASSERT_TRUE(Started("a3"));
  ASSERT_TRUE(Started("a4"));
  ASSERT_TRUE(engine_.Enqueue(Team("b2", "team-b", 1, 8, kStandard, 5)).ok());
  engine_.Pass(40, driver_);
  EXPECT_TRUE(Started("b2"));  // both borrowers taken: one alone does not make room
  std::vector<std::string> evicted = driver_.evicted;
  std::sort(evicted.begin(), evicted.end());
  EXPECT_EQ(evicted, (std::vector<std::string>{"a2", "a3", "a4"}));
  EXPECT_TRUE(Started("a1"));  // within team-a's nominal: never taken
}

}  // namespace
}  // namespace phalanx::scheduling
