// Tier preemption (core/scheduling/engine/tier_preemption.h) on its own: a job's standing
// from its preemption history, the choice of victims for a gang past its tier's target,
// and the eviction at once or on notice.
#include "core/scheduling/engine/tier_preemption.h"

#include <gtest/gtest.h>

#include "core/scheduling/engine/queue_reclaim.h"
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

constexpr double kDay = 86400;

// Spot: preempted at most twice a day, 15 minutes' minimum run; standard: never by cost.
EnginePolicy Policy() {
  EnginePolicy p = EnginePolicy::Defaults();
  for (TierPolicy& t : p.tiers) {
    if (t.name == "spot") t.max_preemptions_per_day = 2;
    if (t.name == "standard") t.max_preemptions_per_day = 0;
  }
  EXPECT_TRUE(p.Validate().ok());
  return p;
}

class TierPreemptionTest : public ::testing::Test {
 protected:
  TierPreemptionTest() { testing::AddRack(driver_.mutable_state(), "n", 1, "r0"); }  // n0: 8 GPUs

  EngineState state_{Policy(), {}};
  AdmissionOrder order_{state_};
  TierPreemption preemption_{state_};
  QueueReclaim queues_{state_};  // queues off: every victim allowed
  FakeDriver driver_;
};

TEST_F(TierPreemptionTest, AJobsStandingFollowsItsHistory) {
  EXPECT_TRUE(preemption_.StandingOf("j", kSpot, 0, 100).eligible);  // never preempted: no minimum run
  preemption_.Record("j", 1000);
  preemption_.Record("j", 2000);
  PreemptionStanding capped = preemption_.StandingOf("j", kSpot, 2000, 2100);
  EXPECT_FALSE(capped.eligible);
  EXPECT_EQ(capped.guard, PreemptionStanding::Guard::kDailyCap);
  EXPECT_DOUBLE_EQ(capped.eligible_at, 1000 + kDay);
  EXPECT_EQ(preemption_.PreemptionsInDay("j", 2100), 2);
  // The second preemption did not happen after all: only the minimum run holds it now.
  preemption_.Unrecord("j", 2000);
  PreemptionStanding young = preemption_.StandingOf("j", kSpot, 2000, 2100);
  EXPECT_EQ(young.guard, PreemptionStanding::Guard::kMinRun);
  EXPECT_DOUBLE_EQ(young.eligible_at, 2900);
  EXPECT_EQ(preemption_.PreemptionsInDay("j", 1001 + kDay), 0);
  EXPECT_EQ(preemption_.StandingOf("k", kStandard, 0, 5000).guard, PreemptionStanding::Guard::kNeverByCost);
}

TEST_F(TierPreemptionTest, ChoosesALowerTierVictimAndEvictsItAtOnce) {
  AddRunning(state_, driver_, Gang("spot", 1, 8, kSpot, 0, 36000), {"n0"}, 0);
  WaitingGang& w = AddWaiting(state_, Gang("h", 1, 8, kHigh, 100));
  PassContext ctx = ContextAt(5000, driver_, order_);
  std::optional<ChosenPreemption> chosen = preemption_.Choose(w, 3600, queues_, ctx);
  ASSERT_TRUE(chosen.has_value()) << w.why;
  ASSERT_EQ(chosen->decision.victims.size(), 1u);
  EXPECT_EQ(chosen->keys[static_cast<size_t>(chosen->decision.victims[0])], GangKey("spot"));
  EXPECT_EQ(chosen->reason.rfind("preempted for h", 0), 0u) << chosen->reason;
  EXPECT_TRUE(state_.running.contains(GangKey("spot")));  // chosen, not evicted yet

  const EvictionResult result = preemption_.Evict(w, *chosen, ctx);
  EXPECT_FALSE(result.awaiting);
  EXPECT_EQ(result.evicted, std::vector<GangKey>{GangKey("spot")});
  EXPECT_FALSE(state_.running.contains(GangKey("spot")));
  EXPECT_EQ(state_.stats.preemptions, 1u);
  EXPECT_EQ(preemption_.PreemptionsInDay("spot", 5000), 1);
  EXPECT_EQ(driver_.evicted, std::vector<std::string>{"spot"});
}

TEST_F(TierPreemptionTest, AVictimWithWorkAtRiskStopsOnNoticeAndThePreemptorWaitsForIt) {
  AddRunning(state_, driver_, Gang("spot", 1, 8, kSpot, 0, 36000), {"n0"}, 0);
  driver_.graceful_notice = 120;
  driver_.risk["spot"] = 8 * 3600;  // an hour of 8 GPUs since its last checkpoint
  WaitingGang& w = AddWaiting(state_, Gang("h", 1, 8, kHigh, 100));
  PassContext ctx = ContextAt(5000, driver_, order_);
  std::optional<ChosenPreemption> chosen = preemption_.Choose(w, 3600, queues_, ctx);
  ASSERT_TRUE(chosen.has_value()) << w.why;
  ASSERT_EQ(chosen->graceful.size(), 1u);
  EXPECT_TRUE(chosen->graceful[0]);
  const EvictionResult result = preemption_.Evict(w, *chosen, ctx);
  EXPECT_TRUE(result.awaiting);
  EXPECT_EQ(w.awaiting, std::vector<GangKey>{GangKey("spot")});
  EXPECT_EQ(state_.awaiting_gangs, 1);
  const RunningGang& victim = state_.running.at(GangKey("spot"));
  EXPECT_TRUE(victim.evicting);
  EXPECT_DOUBLE_EQ(victim.expected_end, 5120);
  ASSERT_TRUE(state_.next_wake.has_value());
  EXPECT_GT(*state_.next_wake, 5120);  // its preemptor stops waiting after a grace
}

TEST_F(TierPreemptionTest, NoVictimOfTheSameTier) {
  AddRunning(state_, driver_, Gang("peer", 1, 8, kHigh, 0, 36000), {"n0"}, 0);
  WaitingGang& w = AddWaiting(state_, Gang("h", 1, 8, kHigh, 100));
  PassContext ctx = ContextAt(5000, driver_, order_);
  EXPECT_FALSE(preemption_.Choose(w, 3600, queues_, ctx).has_value());
  EXPECT_NE(w.why.find("waiting longer than the high tier's target"), std::string::npos) << w.why;
  EXPECT_TRUE(driver_.evicted.empty());
}

TEST_F(TierPreemptionTest, AHeadTakesBackOnlyPreemptibleBackfillBelowIt) {
  AddRunning(state_, driver_, Gang("spot", 1, 8, kSpot, 0, 36000, true), {"n0"}, 4900, /*reclaimable=*/true);
  WaitingGang& w = AddWaiting(state_, Gang("h", 1, 8, kHigh, 100));
  PassContext ctx = ContextAt(5000, driver_, order_);
  // A reclaim ignores the victim's minimum run (it ran 100 s of 900).
  std::optional<ChosenPreemption> chosen = preemption_.ChooseBackfillReclaim(w, "H100", queues_, ctx);
  ASSERT_TRUE(chosen.has_value());
  EXPECT_EQ(chosen->reason, "reclaimed by the head of its pool");
  EXPECT_EQ(state_.stats.reclaims, 1u);
  EXPECT_FALSE(preemption_.ChooseBackfillReclaim(w, "A100", queues_, ctx).has_value());  // none there
}

}  // namespace
}  // namespace phalanx::scheduling
