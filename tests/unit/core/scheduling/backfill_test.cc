// Backfill (core/scheduling/engine/backfill.h) on its own: a head's expected start from
// the running gangs' expected ends, the backfill rules against it, overdue gangs
// re-forecast.
#include "core/scheduling/engine/backfill.h"

#include <gtest/gtest.h>

#include "tests/unit/core/scheduling/engine_parts_builders.h"

namespace phalanx::scheduling {
namespace {

using testing::AddRunning;
using testing::AddWaiting;
using testing::ContextAt;
using testing::FakeDriver;
using testing::Gang;
using testing::kHigh;
using testing::kSpot;
using testing::kStandard;

// Every tier reserves at once; spot may backfill preemptibly.
EnginePolicy Reserving() {
  EnginePolicy p = EnginePolicy::Defaults();
  for (TierPolicy& t : p.tiers) t.reserve_after_s = 0;
  EXPECT_TRUE(p.Validate().ok());
  return p;
}

class BackfillTest : public ::testing::Test {
 protected:
  BackfillTest() { testing::AddRack(driver_.mutable_state(), "n", 2, "r0"); }  // n0, n1: 8 GPUs each

  EngineState state_{Reserving(), {}};
  AdmissionOrder order_{state_};
  Backfill backfill_{state_};
  FakeDriver driver_;
};

TEST_F(BackfillTest, AHeadStartsWhenEnoughRunningGangsEnd) {
  AddRunning(state_, driver_, Gang("early", 1, 8, kStandard, 0, 100), {"n0"}, 0);
  AddRunning(state_, driver_, Gang("late", 1, 8, kStandard, 0, 300), {"n1"}, 0);
  WaitingGang& one = AddWaiting(state_, Gang("one", 1, 8, kHigh, 1));
  WaitingGang& two = AddWaiting(state_, Gang("two", 2, 8, kHigh, 1));
  PassContext ctx = ContextAt(10, driver_, order_);
  const HeadPlan h1 = backfill_.PlanHead(one, "H100", ctx);
  EXPECT_TRUE(h1.reservation.reachable);
  EXPECT_DOUBLE_EQ(h1.reservation.expected_start, 100);
  const HeadPlan h2 = backfill_.PlanHead(two, "H100", ctx);
  EXPECT_TRUE(h2.reservation.reachable);
  EXPECT_DOUBLE_EQ(h2.reservation.expected_start, 300);
  EXPECT_EQ(h2.reservation.spare_gpus, 0);
}

TEST_F(BackfillTest, AHeadLargerThanItsPoolIsUnreachableAndRememberedForThePass) {
  WaitingGang& big = AddWaiting(state_, Gang("big", 3, 8, kHigh, 0));
  PassContext ctx = ContextAt(10, driver_, order_);
  EXPECT_FALSE(backfill_.PlanHead(big, "H100", ctx).reservation.reachable);
  big.since = 0;
  EXPECT_FALSE(backfill_.HeadFor(big, ctx).has_value());
  EXPECT_TRUE(ctx.unreachable.contains(std::make_tuple(std::string("H100"), 8, 3)));
}

TEST_F(BackfillTest, PreemptibleBackfillBelowTheHeadCountsAsFreeAtOnce) {
  AddRunning(state_, driver_, Gang("spot", 1, 8, kSpot, 0, 5000, true), {"n0"}, 0, /*reclaimable=*/true);
  AddRunning(state_, driver_, Gang("std", 1, 8, kStandard, 0, 5000), {"n1"}, 0);
  WaitingGang& head = AddWaiting(state_, Gang("head", 1, 8, kHigh, 1));
  PassContext ctx = ContextAt(10, driver_, order_);
  const HeadPlan h = backfill_.PlanHead(head, "H100", ctx);
  EXPECT_TRUE(h.reservation.reachable);
  EXPECT_DOUBLE_EQ(h.reservation.expected_start, 10);  // the spot gang is taken back
}

TEST_F(BackfillTest, ATierThatHasNotWaitedLongEnoughIsNoHead) {
  // The shipped defaults: the high tier reserves after an hour.
  EngineState patient(EnginePolicy::Defaults(), {});
  Backfill backfill(patient);
  WaitingGang& w = AddWaiting(patient, Gang("w", 1, 8, kHigh, 0));
  w.since = 0;
  PassContext early = ContextAt(100, driver_, order_);
  EXPECT_FALSE(backfill.HeadFor(w, early).has_value());
  PassContext later = ContextAt(3600, driver_, order_);
  ASSERT_TRUE(backfill.HeadFor(w, later).has_value());
  // A pool that has a head already gets no second one.
  later.heads.emplace("H100", HeadPlan{});
  EXPECT_FALSE(backfill.HeadFor(w, later).has_value());
}

TEST_F(BackfillTest, TheBackfillRulesAgainstAHead) {
  AddRunning(state_, driver_, Gang("a", 1, 8, kStandard, 0, 1000), {"n0"}, 0);
  WaitingGang& head = AddWaiting(state_, Gang("head", 2, 8, kHigh, 1));
  PassContext ctx = ContextAt(0, driver_, order_);
  ctx.heads.emplace("H100", backfill_.PlanHead(head, "H100", ctx));
  ASSERT_DOUBLE_EQ(ctx.heads.at("H100").reservation.expected_start, 1000);
  Admission on_n1;
  on_n1.pool = "H100";
  on_n1.members = {placement::MemberPlacement{.node = NodeName("n1"), .gpus = placement::AllGpus(8)}};
  // (a) ends before the head's start.
  EXPECT_EQ(backfill_.KindOf(Gang("short", 1, 8, kStandard, 2, 500), on_n1, ctx), AdmitKind::kBackfillEndsInTime);
  // Neither (a) nor (b): the head needs both nodes at 1000.
  EXPECT_EQ(backfill_.KindOf(Gang("long", 1, 8, kStandard, 2, 5000), on_n1, ctx), std::nullopt);
  // (c) a checkpointing spot gang below the head.
  EXPECT_EQ(backfill_.KindOf(Gang("spot", 1, 8, kSpot, 2, 5000, true), on_n1, ctx), AdmitKind::kPreemptibleBackfill);
  // The head itself, and a pool without a head, fit.
  EXPECT_EQ(backfill_.KindOf(head.req, on_n1, ctx), AdmitKind::kFits);
  Admission elsewhere = on_n1;
  elsewhere.pool = "A100";
  EXPECT_EQ(backfill_.KindOf(Gang("long", 1, 8, kStandard, 2, 5000), elsewhere, ctx), AdmitKind::kFits);
  // Backfill off: nothing passes a head.
  state_.policy.backfill = false;
  EXPECT_EQ(backfill_.KindOf(Gang("short", 1, 8, kStandard, 2, 500), on_n1, ctx), std::nullopt);
}

TEST_F(BackfillTest, SpareGpusAtTheHeadsStartTakeBackfillUntilTheyAreGone) {
  // The head needs one 8-GPU node at 1000; the other node's GPUs are spare for (b).
  AddRunning(state_, driver_, Gang("a", 1, 8, kStandard, 0, 1000), {"n0"}, 0);
  AddRunning(state_, driver_, Gang("b", 1, 8, kStandard, 0, 1000), {"n1"}, 0);
  WaitingGang& head = AddWaiting(state_, Gang("head", 1, 8, kHigh, 1));
  PassContext ctx = ContextAt(0, driver_, order_);
  HeadPlan plan = backfill_.PlanHead(head, "H100", ctx);
  ASSERT_EQ(plan.reservation.spare_gpus, 8);
  Admission four;
  four.pool = "H100";
  four.members = {placement::MemberPlacement{.node = NodeName("n1"), .gpus = placement::AllGpus(4)}};
  EXPECT_TRUE(plan.TakeIfStillFits(four, driver_.state()));
  EXPECT_EQ(plan.reservation.spare_gpus, 4);
  // Four more on n0 would leave no whole node for the head.
  Admission other = four;
  other.members[0].node = NodeName("n0");
  EXPECT_FALSE(plan.TakeIfStillFits(other, driver_.state()));
  EXPECT_EQ(plan.reservation.spare_gpus, 4);  // unchanged when refused
}

TEST_F(BackfillTest, AGangPastItsExpectedEndIsExpectedToRunAsLongAgain) {
  AddRunning(state_, driver_, Gang("x", 1, 8, kStandard, 0, 1000), {"n0"}, 0);
  RunningGang& leaving = AddRunning(state_, driver_, Gang("y", 1, 8, kStandard, 0, 1000), {"n1"}, 0);
  leaving.evicting = true;
  backfill_.ReforecastOverdue(500);  // nothing overdue yet
  EXPECT_DOUBLE_EQ(state_.running.at(GangKey("x")).expected_end, 1000);
  backfill_.ReforecastOverdue(1500);
  EXPECT_DOUBLE_EQ(state_.running.at(GangKey("x")).expected_end, 2500);
  // A gang asked to stop is expected within the grace, and is no overrun.
  EXPECT_DOUBLE_EQ(state_.running.at(GangKey("y")).expected_end, 1500 + state_.forecast.overdue_grace_s);
  EXPECT_EQ(state_.stats.overruns, 1u);
}

TEST_F(BackfillTest, RemembersTheHeadsOfThePass) {
  WaitingGang& head = AddWaiting(state_, Gang("head", 1, 8, kHigh, 1));
  PassContext ctx = ContextAt(0, driver_, order_);
  ctx.heads.emplace("H100", backfill_.PlanHead(head, "H100", ctx));
  EXPECT_TRUE(backfill_.Heads().empty());
  backfill_.Remember(ctx);
  ASSERT_EQ(backfill_.Heads().size(), 1u);
  EXPECT_EQ(backfill_.Heads()[0].head, GangKey("head"));
}

}  // namespace
}  // namespace phalanx::scheduling
