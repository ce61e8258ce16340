// Gangs that cannot start (engine.h, engine/admission_order_fit.cc): the walk skips runs of waiting
// gangs that could only wait. Each test pins what a wrong skip would change: a gang that
// fits after a release, a start or an eviction earlier in the pass; a would-be head after
// arrivals only; the expected waits of skipped gangs (the GPUs ahead of them as the pass
// counted them, also after later changes); quota reasons kept through untried runs.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "core/scheduling/engine.h"
#include "tests/unit/core/scheduling/fake_driver.h"

namespace phalanx::scheduling {
namespace {

using testing::FakeDriver;
using testing::Gang;
using testing::kHigh;
using testing::kSpot;
using testing::kStandard;

constexpr Milli G = kMilliGpu;

std::string NoFit(int gpus, int free, const std::string& wait) {
  return fmt::format("does not fit now ({} GPUs, {} free); expected wait {}", gpus, free, wait);
}

// The shipped defaults, but high reserves at once (the rules these tests walk past).
EnginePolicy HighHeadsAtOnce() {
  EnginePolicy p = EnginePolicy::Defaults();
  for (TierPolicy& t : p.tiers)
    if (t.name == "high") t.reserve_after_s = 0;
  EXPECT_TRUE(p.Validate().ok());
  return p;
}

class FitSkipTest : public ::testing::Test {
 protected:
  FitSkipTest() { testing::AddRack(driver_.mutable_state(), "n", 2, "r0"); }  // 16 GPUs
  void Finish(const std::string& key) {
    driver_.Release(GangKey(key));
    engine_.OnFinished(GangKey(key));
  }
  bool Started(const std::string& key) const { return engine_.IsRunning(GangKey(key)); }
  std::string Why(const std::string& key) const { return engine_.WhyWaiting(GangKey(key)); }
  // Two high-tier gangs fill the cluster (no lower-tier victims), ending at 1000 and 2000.
  void Fill() {
    ASSERT_TRUE(engine_.Enqueue(Gang("r1", 1, 8, kHigh, 0, 1000)).ok());
    ASSERT_TRUE(engine_.Enqueue(Gang("r2", 1, 8, kHigh, 0, 2000)).ok());
    engine_.Pass(0, driver_);
    ASSERT_TRUE(Started("r1") && Started("r2"));
  }
  // Standard gangs of 1 x 4 GPUs, submitted 1..n.
  void Standard(int n) {
    for (int i = 1; i <= n; ++i)
      ASSERT_TRUE(engine_.Enqueue(Gang(fmt::format("s{}", i), 1, 4, kStandard, i, 100)).ok());
  }

  FakeDriver driver_;
  Engine engine_{HighHeadsAtOnce()};
};

TEST_F(FitSkipTest, SkippedGangsGetTheExpectedWaitOfTheGpusAheadOfThem) {
  Fill();
  Standard(5);
  engine_.Pass(0, driver_);
  EXPECT_EQ(engine_.waiting(), 5u);
  // 8 GPUs free at 1000, 16 at 2000: each gang waits for its own 4 plus those before it.
  EXPECT_EQ(Why("s1"), NoFit(4, 0, "17m"));
  EXPECT_EQ(Why("s2"), NoFit(4, 0, "17m"));
  EXPECT_EQ(Why("s3"), NoFit(4, 0, "33m"));
  EXPECT_EQ(Why("s4"), NoFit(4, 0, "33m"));
  EXPECT_EQ(Why("s5"), NoFit(4, 0, "7.0d"));
}

TEST_F(FitSkipTest, EveryGangOfAShapeThatFitsAfterAReleaseStarts) {
  Fill();
  Standard(5);
  engine_.Pass(0, driver_);
  Finish("r1");
  engine_.Pass(1000, driver_);
  // The first start leaves room for the second gang of the same shape, not for the third
  // (s1 and s2 end at 1100, r2 at 2000).
  EXPECT_TRUE(Started("s1"));
  EXPECT_TRUE(Started("s2"));
  EXPECT_FALSE(Started("s3"));
  EXPECT_EQ(Why("s3"), NoFit(4, 0, "2m"));
  EXPECT_EQ(Why("s4"), NoFit(4, 0, "2m"));
  EXPECT_EQ(Why("s5"), NoFit(4, 0, "17m"));
}

TEST_F(FitSkipTest, ASmallerShapeAfterAFailedOneStillStarts) {
  ASSERT_TRUE(engine_.Enqueue(Gang("r1", 1, 8, kHigh, 0, 1000)).ok());
  ASSERT_TRUE(engine_.Enqueue(Gang("r2", 1, 2, kHigh, 0, 2000)).ok());
  engine_.Pass(0, driver_);  // 6 GPUs free
  Standard(3);
  ASSERT_TRUE(engine_.Enqueue(Gang("small", 1, 2, kStandard, 10, 100)).ok());
  engine_.Pass(1, driver_);
  EXPECT_TRUE(Started("s1"));
  EXPECT_FALSE(Started("s2"));
  EXPECT_FALSE(Started("s3"));
  EXPECT_TRUE(Started("small"));  // after two 4-GPU gangs that could not
}

TEST_F(FitSkipTest, AGangOfTheSameSizeAfterAnEvictionInThePassStarts) {
  ASSERT_TRUE(engine_.Enqueue(Gang("r", 1, 8, kHigh, 0, 100000)).ok());
  ASSERT_TRUE(engine_.Enqueue(Gang("v", 1, 8, kSpot, 0, 100000)).ok());
  engine_.Pass(0, driver_);
  ASSERT_TRUE(Started("v"));
  Standard(2);
  engine_.Pass(10, driver_);
  EXPECT_EQ(Why("s1"), NoFit(4, 0, "27.8h"));
  // A high-tier gang preempts the spot gang: half of its node is left for s1, not for s2.
  ASSERT_TRUE(engine_.Enqueue(Gang("h", 1, 4, kHigh, 20, 100)).ok());
  engine_.Pass(5000, driver_);
  ASSERT_EQ(driver_.evicted, std::vector<std::string>{"v"});
  EXPECT_TRUE(Started("h"));
  EXPECT_TRUE(Started("s1"));
  EXPECT_FALSE(Started("s2"));
}

TEST_F(FitSkipTest, ReasonsStayThoseOfTheirPassAfterGangsLeaveOrArrive) {
  Fill();
  Standard(5);
  engine_.Pass(0, driver_);
  ASSERT_EQ(Why("s3"), NoFit(4, 0, "33m"));
  // The pass counted s1 and s2 ahead of s3: its reason says so until the next pass.
  ASSERT_TRUE(engine_.Remove(GangKey("s1")).ok());
  ASSERT_TRUE(engine_.Remove(GangKey("s2")).ok());
  EXPECT_EQ(Why("s3"), NoFit(4, 0, "33m"));
  engine_.Pass(0, driver_);
  EXPECT_EQ(Why("s3"), NoFit(4, 0, "17m"));
  // A re-queued gang keeps its first submission: it is ahead of s3 from the next full pass.
  ASSERT_TRUE(engine_.Enqueue(Gang("back", 1, 8, kStandard, 0.5, 100)).ok());
  EXPECT_EQ(Why("s3"), NoFit(4, 0, "17m"));
  engine_.Pass(1, driver_, Engine::Scope::kArrivalsOnly);  // s3 is not tried: keeps its reason
  EXPECT_EQ(Why("s3"), NoFit(4, 0, "17m"));
  EXPECT_EQ(Why("back"), NoFit(8, 0, "17m"));
  engine_.Pass(2, driver_);
  EXPECT_EQ(Why("s3"), NoFit(4, 0, "33m"));
}

TEST_F(FitSkipTest, AWouldBeHeadIsWalkedInAPassAfterArrivalsOnly) {
  Fill();
  Standard(2);
  ASSERT_TRUE(engine_.Enqueue(Gang("h", 1, 8, kHigh, 5, 100)).ok());
  engine_.Pass(0, driver_);
  ASSERT_EQ(engine_.Heads().size(), 1u);
  EXPECT_EQ(engine_.Heads()[0].head.str(), "h");
  ASSERT_TRUE(engine_.Enqueue(Gang("x", 1, 4, kStandard, 30, 100)).ok());
  engine_.Pass(1, driver_, Engine::Scope::kArrivalsOnly);
  // h is not tried again, but still holds its pool's reservation.
  ASSERT_EQ(engine_.Heads().size(), 1u);
  EXPECT_EQ(engine_.Heads()[0].head.str(), "h");
  // x counts h and the two untried gangs before it.
  EXPECT_EQ(Why("x"), "behind the head of pool H100 (h, expected start in 17m); expected wait 7.0d");
  EXPECT_EQ(Why("s1"), "behind the head of pool H100 (h, expected start in 17m); expected wait 33m");
}

TEST_F(FitSkipTest, ExpectedWaitCountsTheGangsAheadOfIt) {
  Fill();
  Standard(3);
  engine_.Pass(0, driver_);
  GangRequest probe = Gang("probe", 1, 4, kStandard, 2.5, 100);
  // s1 and s2 (8 GPUs) wait before it: 12 GPUs are free at 2000.
  EXPECT_DOUBLE_EQ(engine_.ExpectedWait(probe, 0, driver_.state()), 2000);
  ASSERT_TRUE(engine_.Remove(GangKey("s1")).ok());
  EXPECT_DOUBLE_EQ(engine_.ExpectedWait(probe, 0, driver_.state()), 1000);
}

// Team queues: a gang refused for want of quota room keeps that reason through a pass
// after arrivals only that does not try it, though its queue has room by then.
TEST(FitSkipQueuesTest, QuotaReasonsCarryOverARunThatIsNotTried) {
  QueueConfig q;
  q.queues = {{.name = "team-a", .cohort = "org", .weight = 1, .parent = "", .quotas = {{"H100", 8 * G, {}, {}}}},
              {.name = "team-b", .cohort = "org", .weight = 1, .parent = "", .quotas = {{"H100", 8 * G, {}, {}}}}};
  q.default_queue = "team-a";
  ASSERT_TRUE(q.Validate().ok());
  FakeDriver driver;
  testing::AddRack(driver.mutable_state(), "n", 2, "r0");
  Engine engine(EnginePolicy::Defaults(), q);
  // n0 is taken by a pod the queues do not see; team-a runs 8 GPUs on n1.
  ASSERT_TRUE(driver.mutable_state().Allocate(PodUid("other"), NodeName("n0"), placement::AllGpus(8), 0).ok());
  GangRequest a1 = Gang("a1", 1, 8, kStandard, 0, 1000);
  a1.queue = "team-a";
  ASSERT_TRUE(engine.Enqueue(a1).ok());
  engine.Pass(0, driver);
  ASSERT_TRUE(engine.IsRunning(GangKey("a1")));
  // team-b's booking leaves team-a nothing to borrow.
  ASSERT_TRUE(engine.BookOutside(GangKey("b"), "team-b", "H100", 8 * G, kStandard, 0).ok());
  for (int i = 1; i <= 3; ++i) {
    GangRequest x = Gang(fmt::format("x{}", i), 1, 4, kStandard, i, 100);
    x.queue = "team-a";
    ASSERT_TRUE(engine.Enqueue(x).ok());
  }
  engine.Pass(1, driver);
  const std::string refused = engine.WhyWaiting(GangKey("x2"));
  ASSERT_TRUE(refused.starts_with("queue team-a is at 8/8 nominal GPUs of H100")) << refused;
  // Room to borrow again, but nothing was released: the next pass tries only the new gang.
  engine.UnbookOutside(GangKey("b"));
  GangRequest z = Gang("z", 1, 4, kStandard, 10, 100);
  z.queue = "team-a";
  ASSERT_TRUE(engine.Enqueue(z).ok());
  engine.Pass(2, driver, Engine::Scope::kArrivalsOnly);
  EXPECT_EQ(engine.WhyWaiting(GangKey("x1")), refused);
  EXPECT_EQ(engine.WhyWaiting(GangKey("x3")), refused);
  EXPECT_EQ(engine.WhyWaiting(GangKey("z")), NoFit(4, 0, "7.0d"));  // x1..x3 wait before it
  engine.Pass(3, driver);
  EXPECT_EQ(engine.WhyWaiting(GangKey("x1")), NoFit(4, 0, "17m"));
  EXPECT_EQ(engine.WhyWaiting(GangKey("x3")), NoFit(4, 0, "7.0d"));
}

}  // namespace
}  // namespace phalanx::scheduling
