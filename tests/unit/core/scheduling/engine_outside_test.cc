// Usage booked outside the engine (Engine::BookOutside: the extender's MIG pods) counts in
// its queue's quota, and nothing else: never a victim, never reclaimed, no forecast.
#include <gtest/gtest.h>

#include "core/scheduling/engine.h"
#include "tests/unit/core/scheduling/fake_driver.h"

namespace phalanx::scheduling {
namespace {

using testing::FakeDriver;
using testing::kSpot;
using testing::kStandard;

constexpr Milli G = kMilliGpu;

QueueConfig Teams(std::vector<std::string> names, std::optional<Milli> borrowing = std::nullopt) {
  QueueConfig c;
  for (const std::string& n : names) {
    c.queues.push_back({.name = n, .cohort = "org", .weight = 1, .parent = "", .quotas = {{"H100", 8 * G, borrowing, {}}}});
  }
  c.default_queue = names.front();
  EXPECT_TRUE(c.Validate().ok());
  return c;
}

GangRequest Team(const std::string& key, const std::string& queue, int gpus, int priority, double submitted) {
  GangRequest g = testing::Gang(key, 1, gpus, priority, submitted, 36000);
  g.queue = queue;
  return g;
}

class EngineOutsideTest : public ::testing::Test {
 protected:
  EngineOutsideTest() { testing::AddRack(driver_.mutable_state(), "n", 2, "r0"); }
  FakeDriver driver_;
};

TEST_F(EngineOutsideTest, BookedUsageHoldsAGangToItsQuota) {
  Engine engine(EnginePolicy::Defaults(), Teams({"team-a", "team-b"}, /*borrowing=*/0));
  ASSERT_TRUE(engine.BookOutside(GangKey("mig:p1"), "team-a", "H100", 4 * G, kStandard, 0).ok());
  EXPECT_EQ(engine.queues().Usage("team-a", "H100"), 4 * G);
  ASSERT_TRUE(engine.Enqueue(Team("a1", "team-a", 8, kStandard, 1)).ok());
  engine.Pass(10, driver_);
  EXPECT_FALSE(engine.IsRunning(GangKey("a1")));
  EXPECT_EQ(engine.WhyWaiting(GangKey("a1")),
            "queue team-a is at 4/8 nominal GPUs of H100 and may borrow at most 0 beyond it; this gang needs 8");
  EXPECT_FALSE(engine.IsRunning(GangKey("mig:p1")));  // counted, not run here
  engine.UnbookOutside(GangKey("mig:p1"));
  engine.UnbookOutside(GangKey("mig:never"));  // unknown: ignored
  EXPECT_EQ(engine.queues().Usage("team-a", "H100"), 0);
  engine.Pass(20, driver_);
  EXPECT_TRUE(engine.IsRunning(GangKey("a1")));
}

TEST_F(EngineOutsideTest, ABookedBorrowerIsNeverEvicted) {
  // Three queues of 8 nominal GPUs each on 16 GPUs. a1 and c1 fill the cluster within their
  // nominal quotas; team-a's booking borrows team-b's quota. team-b's gang is within its
  // nominal and does not fit: the only borrower the ledger names is the booking, which the
  // engine may not evict (it holds no GPUs the engine places).
  Engine engine(EnginePolicy::Defaults(), Teams({"team-a", "team-b", "team-c"}));
  ASSERT_TRUE(engine.Enqueue(Team("a1", "team-a", 8, kSpot, 0)).ok());
  ASSERT_TRUE(engine.Enqueue(Team("c1", "team-c", 8, kSpot, 0)).ok());
  engine.Pass(0, driver_);
  ASSERT_TRUE(engine.IsRunning(GangKey("a1")) && engine.IsRunning(GangKey("c1")));
  ASSERT_TRUE(engine.BookOutside(GangKey("mig:p1"), "team-a", "H100", 8 * G, kSpot, 5).ok());
  EXPECT_EQ(engine.queues().Borrowing(), std::vector<GangKey>{GangKey("mig:p1")});
  ASSERT_TRUE(engine.Enqueue(Team("b1", "team-b", 8, kStandard, 10)).ok());
  for (double t = 10; t < 4000; t += 500) engine.Pass(t, driver_);
  EXPECT_TRUE(driver_.evicted.empty());
  EXPECT_FALSE(engine.IsRunning(GangKey("b1")));
  EXPECT_TRUE(engine.IsBookedOutside(GangKey("mig:p1")));
  EXPECT_EQ(engine.stats().queue_reclaims, 0u);
}

TEST_F(EngineOutsideTest, RebookingReplacesAndKeysStayApartFromGangs) {
  Engine engine(EnginePolicy::Defaults(), Teams({"team-a", "team-b"}));
  ASSERT_TRUE(engine.BookOutside(GangKey("mig:p1"), "team-b", "H100", 428, kStandard, 0).ok());
  const uint64_t version = engine.queues().version();
  ASSERT_TRUE(engine.BookOutside(GangKey("mig:p1"), "team-b", "H100", 428, kStandard, 0).ok());
  EXPECT_EQ(engine.queues().version(), version);  // the same booking: nothing changed
  ASSERT_TRUE(engine.BookOutside(GangKey("mig:p1"), "nobody", "H100", 856, kStandard, 0).ok());
  EXPECT_EQ(engine.queues().Usage("team-b", "H100"), 0);
  EXPECT_EQ(engine.queues().Usage("team-a", "H100"), 856);  // unknown queue: the default
  EXPECT_EQ(engine.booked_outside(), 1u);
  EXPECT_EQ(engine.Enqueue(Team("mig:p1", "team-a", 1, kStandard, 0)).code(), StatusCode::kAlreadyExists);
  ASSERT_TRUE(engine.Enqueue(Team("a1", "team-a", 1, kStandard, 0)).ok());
  EXPECT_EQ(engine.BookOutside(GangKey("a1"), "team-a", "H100", 1, kStandard, 0).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(engine.BookOutside(GangKey("x"), "team-a", "H100", -1, kStandard, 0).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(engine.BookOutside(GangKey(""), "team-a", "H100", 1, kStandard, 0).code(), StatusCode::kInvalidArgument);
}

TEST_F(EngineOutsideTest, BookingsSurviveSetQueues) {
  Engine engine;  // queues off: booked, counted once queues are on
  ASSERT_TRUE(engine.BookOutside(GangKey("mig:p1"), "team-b", "H100", 428, kStandard, 0).ok());
  EXPECT_EQ(engine.queues().Usage("team-b", "H100"), 0);
  ASSERT_TRUE(engine.SetQueues(Teams({"team-a", "team-b"})).ok());
  EXPECT_EQ(engine.queues().Usage("team-b", "H100"), 428);
  ASSERT_TRUE(engine.SetQueues(Teams({"team-a", "team-c"})).ok());
  EXPECT_EQ(engine.queues().Usage("team-a", "H100"), 428);  // team-b is gone: the default queue
  ASSERT_TRUE(engine.SetQueues({}).ok());
  ASSERT_TRUE(engine.SetQueues(Teams({"team-a", "team-b"})).ok());
  EXPECT_EQ(engine.queues().Usage("team-b", "H100"), 428);
}

}  // namespace
}  // namespace phalanx::scheduling
