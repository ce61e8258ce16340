#include "core/admission/admission_queue.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace phalanx::admission {
namespace {

using ::testing::HasSubstr;
using std::chrono::seconds;

const MonotonicTime kT0{seconds(1000)};

WaitingGang Gang(std::string key, int priority, std::string pool = "H100", bool gang = true) {
  return WaitingGang{GangKey(std::move(key)), std::move(pool), priority, gang};
}

// Keys returned by one admission pass in which nothing fits.
std::vector<std::string> FailingPass(AdmissionQueue& q, const std::string& pool, MonotonicTime now) {
  std::vector<std::string> tried;
  std::optional<GangKey> after;
  while (auto next = q.NextToTry(pool, now, after)) {
    tried.push_back(next->str());
    EXPECT_TRUE(q.RecordAttempt(*next, /*fitted=*/false, now).ok());
    after = *next;
  }
  return tried;
}

TEST(AdmissionQueueTest, OrdersByPriorityThenArrival) {
  AdmissionQueue q;
  ASSERT_TRUE(q.Enqueue(Gang("ml/low", 100), kT0).ok());
  ASSERT_TRUE(q.Enqueue(Gang("ml/high-1", 1000), kT0 + seconds(1)).ok());
  ASSERT_TRUE(q.Enqueue(Gang("ml/high-2", 1000), kT0 + seconds(2)).ok());
  ASSERT_TRUE(q.Enqueue(Gang("ml/other-pool", 5000, "A100"), kT0).ok());
  std::vector<std::string> order;
  for (const QueuedGang* e : q.Ordered("H100")) order.push_back(e->gang.key.str());
  EXPECT_THAT(order, ::testing::ElementsAre("ml/high-1", "ml/high-2", "ml/low"));
  EXPECT_EQ(q.NextToTry("H100", kT0)->str(), "ml/high-1");
  EXPECT_EQ(q.NextToTry("A100", kT0)->str(), "ml/other-pool");
  EXPECT_FALSE(q.NextToTry("T4", kT0).has_value());
}

TEST(AdmissionQueueTest, AdmittedGangLeavesAndTheNextMovesUp) {
  AdmissionQueue q;
  ASSERT_TRUE(q.Enqueue(Gang("ml/a", 10), kT0).ok());
  ASSERT_TRUE(q.Enqueue(Gang("ml/b", 10), kT0).ok());
  ASSERT_TRUE(q.RecordAttempt(GangKey("ml/a"), /*fitted=*/true, kT0).ok());
  EXPECT_EQ(q.Find(GangKey("ml/a")), nullptr);
  EXPECT_EQ(q.NextToTry("H100", kT0)->str(), "ml/b");
}

TEST(AdmissionQueueTest, HeadThatDoesNotFitHoldsLaterGangs) {
  AdmissionQueue q;
  ASSERT_TRUE(q.Enqueue(Gang("ml/big", 1000), kT0).ok());
  ASSERT_TRUE(q.Enqueue(Gang("ml/small", 100), kT0).ok());
  // big fails and holds the head: small is not even tried.
  EXPECT_THAT(FailingPass(q, "H100", kT0), ::testing::ElementsAre("ml/big"));
  EXPECT_EQ(q.HoldingHead("H100", kT0)->str(), "ml/big");
  EXPECT_EQ(q.StateOf(*q.Find(GangKey("ml/big")), kT0), EntryState::kHolding);
  // Still held 299 s later.
  EXPECT_THAT(FailingPass(q, "H100", kT0 + seconds(299)), ::testing::ElementsAre("ml/big"));
  EXPECT_EQ(*q.Find(GangKey("ml/big"))->hold_since, kT0);
}

TEST(AdmissionQueueTest, HoldExpiresAfterHeadOfLineSeconds) {
  AdmissionQueue q;
  ASSERT_TRUE(q.Enqueue(Gang("ml/big", 1000), kT0).ok());
  ASSERT_TRUE(q.Enqueue(Gang("ml/mid", 500), kT0).ok());
  ASSERT_TRUE(q.Enqueue(Gang("ml/small", 100), kT0).ok());
  EXPECT_THAT(FailingPass(q, "H100", kT0), ::testing::ElementsAre("ml/big"));
  // At 300 s big's hold is spent: it is still tried first, then mid, which fails and
  // becomes the holding head, so small still waits.
  const MonotonicTime later = kT0 + seconds(300);
  EXPECT_THAT(FailingPass(q, "H100", later), ::testing::ElementsAre("ml/big", "ml/mid"));
  EXPECT_EQ(q.StateOf(*q.Find(GangKey("ml/big")), later), EntryState::kSpent);
  EXPECT_EQ(q.HoldingHead("H100", later)->str(), "ml/mid");
  // Another 300 s: both spent, everyone is tried in order.
  EXPECT_THAT(FailingPass(q, "H100", later + seconds(300)),
              ::testing::ElementsAre("ml/big", "ml/mid", "ml/small"));
}

TEST(AdmissionQueueTest, ConfigurableHeadOfLine) {
  AdmissionQueue q(AdmissionConfig{seconds(10)});
  ASSERT_TRUE(q.Enqueue(Gang("ml/a", 2), kT0).ok());
  ASSERT_TRUE(q.Enqueue(Gang("ml/b", 1), kT0).ok());
  EXPECT_THAT(FailingPass(q, "H100", kT0), ::testing::ElementsAre("ml/a"));
  EXPECT_THAT(FailingPass(q, "H100", kT0 + seconds(10)), ::testing::ElementsAre("ml/a", "ml/b"));
}

TEST(AdmissionQueueTest, HigherPriorityArrivalIsTriedBeforeTheHoldingHead) {
  AdmissionQueue q;
  ASSERT_TRUE(q.Enqueue(Gang("ml/standard", 1000), kT0).ok());
  EXPECT_THAT(FailingPass(q, "H100", kT0), ::testing::ElementsAre("ml/standard"));
  ASSERT_TRUE(q.Enqueue(Gang("ml/critical", 1000000), kT0 + seconds(5)).ok());
  EXPECT_EQ(q.NextToTry("H100", kT0 + seconds(5))->str(), "ml/critical");
  // critical fails too and now holds; standard (behind it) is not tried.
  EXPECT_THAT(FailingPass(q, "H100", kT0 + seconds(5)), ::testing::ElementsAre("ml/critical"));
  EXPECT_EQ(q.HoldingHead("H100", kT0 + seconds(5))->str(), "ml/critical");
}

TEST(AdmissionQueueTest, NonGangEntriesBypassAHoldingHead) {
  AdmissionQueue q;
  ASSERT_TRUE(q.Enqueue(Gang("ml/big", 1000), kT0).ok());
  ASSERT_TRUE(q.Enqueue(Gang("ml/gang", 100), kT0).ok());
  ASSERT_TRUE(q.Enqueue(Gang("ml/pod", 100, "H100", /*gang=*/false), kT0).ok());
  // big holds: the later gang waits, the single pod is still tried.
  EXPECT_THAT(FailingPass(q, "H100", kT0), ::testing::ElementsAre("ml/big", "ml/pod"));
  // A failing non-gang entry never holds anything.
  EXPECT_FALSE(q.Find(GangKey("ml/pod"))->hold_since.has_value());
}

TEST(AdmissionQueueTest, UpdatePriorityReordersAndKeepsArrival) {
  AdmissionQueue q;
  ASSERT_TRUE(q.Enqueue(Gang("ml/a", 1), kT0).ok());
  ASSERT_TRUE(q.Enqueue(Gang("ml/b", 1), kT0).ok());
  ASSERT_TRUE(q.UpdatePriority(GangKey("ml/b"), 5).ok());
  EXPECT_EQ(q.NextToTry("H100", kT0)->str(), "ml/b");
  ASSERT_TRUE(q.UpdatePriority(GangKey("ml/b"), 1).ok());
  EXPECT_EQ(q.NextToTry("H100", kT0)->str(), "ml/a");  // FIFO again
  EXPECT_EQ(q.UpdatePriority(GangKey("ml/x"), 1).code(), StatusCode::kNotFound);
}

TEST(AdmissionQueueTest, ReportsSpecificErrors) {
  AdmissionQueue q;
  ASSERT_TRUE(q.Enqueue(Gang("ml/a", 1), kT0).ok());
  Status dup = q.Enqueue(Gang("ml/a", 1), kT0);
  EXPECT_EQ(dup.code(), StatusCode::kAlreadyExists);
  EXPECT_THAT(dup.message(), HasSubstr("ml/a is already queued"));
  EXPECT_EQ(q.Enqueue(Gang("", 1), kT0).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(q.Remove(GangKey("ml/x")).code(), StatusCode::kNotFound);
  EXPECT_EQ(q.RecordAttempt(GangKey("ml/x"), false, kT0).code(), StatusCode::kNotFound);
  ASSERT_TRUE(q.Remove(GangKey("ml/a")).ok());
  EXPECT_EQ(q.size(), 0u);
  // A pass whose `after` left the queue ends.
  ASSERT_TRUE(q.Enqueue(Gang("ml/b", 1), kT0).ok());
  EXPECT_FALSE(q.NextToTry("H100", kT0, GangKey("ml/a")).has_value());
}

}  // namespace
}  // namespace phalanx::admission
