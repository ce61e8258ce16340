// The scheduling engine's rules on tiny clusters (docs/algorithms.md, "Scheduling
// engine"): order, backfill (three kinds), reclaim, cost-rule preemption and its guards.
#include "core/scheduling/engine.h"

#include <gtest/gtest.h>

#include "tests/unit/core/scheduling/fake_driver.h"

namespace phalanx::scheduling {
namespace {

using testing::FakeDriver;
using testing::Gang;
using testing::kHigh;
using testing::kSpot;
using testing::kStandard;

// The rules under test, independent of the shipped defaults: every tier holds a
// reservation at once; standard preempts after 2 h, high after 10 min.
EnginePolicy RulesPolicy() {
  EnginePolicy p = EnginePolicy::Defaults();
  for (TierPolicy& t : p.tiers) {
    t.reserve_after_s = 0;
    t.max_preemptions_per_day = 3;
    if (t.name == "standard") t.target_wait_s = 7200;
    if (t.name == "high") t.target_wait_s = 600;
  }
  EXPECT_TRUE(p.Validate().ok());
  return p;
}

class EngineTest : public ::testing::Test {
 protected:
  void Nodes(int n) { testing::AddRack(driver_.mutable_state(), "n", n, "r0"); }
  void Finish(const std::string& key) {
    driver_.Release(GangKey(key));
    engine_.OnFinished(GangKey(key));
  }
  bool Started(const std::string& key) const { return engine_.IsRunning(GangKey(key)); }
  AdmitKind KindOf(const std::string& key) const {
    const Admission* a = driver_.AdmissionOf(key);
    EXPECT_NE(a, nullptr) << key << " was not admitted";
    return a ? a->kind : AdmitKind::kFits;
  }

  FakeDriver driver_;
  Engine engine_{RulesPolicy()};
};

TEST_F(EngineTest, OrdersByPriorityThenFirstSubmission) {
  Nodes(1);
  ASSERT_TRUE(engine_.Enqueue(Gang("a", 1, 8, kStandard, 5)).ok());
  ASSERT_TRUE(engine_.Enqueue(Gang("b", 1, 8, kHigh, 10)).ok());
  // Enqueued last but submitted first (a preempted job re-queued keeps its place).
  ASSERT_TRUE(engine_.Enqueue(Gang("c", 1, 8, kStandard, 1)).ok());
  engine_.Pass(20, driver_);
  EXPECT_TRUE(Started("b"));
  EXPECT_FALSE(Started("a"));
  Finish("b");
  engine_.Pass(30, driver_);
  EXPECT_TRUE(Started("c"));
  EXPECT_FALSE(Started("a"));
  EXPECT_EQ(engine_.waiting(), 1u);
}

TEST_F(EngineTest, BackfillRunsWorkThatEndsBeforeTheHeadStarts) {
  Nodes(2);
  ASSERT_TRUE(engine_.Enqueue(Gang("x", 1, 8, kStandard, 0, 1000)).ok());
  engine_.Pass(0, driver_);
  ASSERT_TRUE(Started("x"));
  ASSERT_TRUE(engine_.Enqueue(Gang("head", 2, 8, kStandard, 1, 500)).ok());
  engine_.Pass(1, driver_);
  ASSERT_EQ(engine_.Heads().size(), 1u);
  EXPECT_EQ(engine_.Heads()[0].head.str(), "head");
  EXPECT_DOUBLE_EQ(engine_.Heads()[0].expected_start, 1000);
  EXPECT_EQ(engine_.Heads()[0].spare_gpus, 0);
  ASSERT_TRUE(engine_.Enqueue(Gang("short", 2, 3, kStandard, 2, 100)).ok());
  ASSERT_TRUE(engine_.Enqueue(Gang("long", 1, 3, kStandard, 3, 5000)).ok());
  engine_.Pass(2, driver_, Engine::Scope::kArrivalsOnly);
  EXPECT_TRUE(Started("short"));
  EXPECT_EQ(KindOf("short"), AdmitKind::kBackfillEndsInTime);
  EXPECT_FALSE(Started("long"));  // would still hold 3 GPUs when the head is due
  EXPECT_NE(engine_.WhyWaiting(GangKey("long")).find("behind the head of pool H100 (head"), std::string::npos)
      << engine_.WhyWaiting(GangKey("long"));
  EXPECT_NE(engine_.WhyWaiting(GangKey("head")).find("expected start in"), std::string::npos)
      << engine_.WhyWaiting(GangKey("head"));
  // The head starts when its GPUs come free, before the long job.
  Finish("short");
  Finish("x");
  engine_.Pass(1000, driver_);
  EXPECT_TRUE(Started("head"));
  EXPECT_FALSE(Started("long"));
}

TEST_F(EngineTest, BackfillUsesOnlyGpusTheHeadWillNotNeed) {
  Nodes(3);
  // n0: 4 GPUs busy until 1000, n1: 8 busy until 1000, n2 free. The head (2 x 8) sees
  // 12 free now and 24 at t=1000: 8 spare.
  ASSERT_TRUE(engine_.Enqueue(Gang("x1", 1, 8, kStandard, 0, 1000)).ok());
  ASSERT_TRUE(engine_.Enqueue(Gang("x2", 1, 4, kStandard, 0, 1000)).ok());
  engine_.Pass(0, driver_);
  ASSERT_TRUE(Started("x1") && Started("x2"));
  ASSERT_TRUE(engine_.Enqueue(Gang("head", 3, 8, kStandard, 1, 500)).ok());
  engine_.Pass(1, driver_);
  ASSERT_EQ(engine_.Heads().size(), 1u);
  EXPECT_EQ(engine_.Heads()[0].spare_gpus, 0);  // 3 x 8 = every GPU
  ASSERT_TRUE(engine_.Remove(GangKey("head")).ok());
  ASSERT_TRUE(engine_.Enqueue(Gang("head2", 2, 8, kStandard, 1, 500)).ok());
  ASSERT_TRUE(engine_.Enqueue(Gang("four", 1, 4, kStandard, 2, 5000)).ok());
  ASSERT_TRUE(engine_.Enqueue(Gang("eight", 1, 8, kStandard, 3, 5000)).ok());
  engine_.Pass(2, driver_);
  // head2 fits now on n2 + ... no: n0 has 4 free, n2 8: 12 < 16. It waits as the head.
  EXPECT_FALSE(Started("head2"));
  EXPECT_TRUE(Started("four"));
  EXPECT_EQ(KindOf("four"), AdmitKind::kBackfillSpareGpus);
  EXPECT_FALSE(Started("eight"));  // 8 > the 4 spare GPUs left
}

TEST_F(EngineTest, PreemptibleBackfillIsReclaimedWhenTheHeadIsReady) {
  Nodes(2);
  ASSERT_TRUE(engine_.Enqueue(Gang("x", 1, 8, kStandard, 0, 1000)).ok());
  engine_.Pass(0, driver_);
  ASSERT_TRUE(engine_.Enqueue(Gang("head", 2, 8, kStandard, 1, 500)).ok());
  ASSERT_TRUE(engine_.Enqueue(Gang("spot-nockpt", 1, 8, kSpot, 2, 5000, false)).ok());
  ASSERT_TRUE(engine_.Enqueue(Gang("spot", 1, 8, kSpot, 3, 5000, true)).ok());
  engine_.Pass(3, driver_);
  EXPECT_FALSE(Started("head"));
  EXPECT_FALSE(Started("spot-nockpt"));  // cannot be taken back without losing its work
  ASSERT_TRUE(Started("spot"));
  EXPECT_EQ(KindOf("spot"), AdmitKind::kPreemptibleBackfill);
  driver_.risk["spot"] = 100;
  Finish("x");
  engine_.Pass(1000, driver_);
  EXPECT_TRUE(Started("head"));
  EXPECT_EQ(KindOf("head"), AdmitKind::kPreempting);
  EXPECT_EQ(driver_.evicted, std::vector<std::string>{"spot"});
  EXPECT_EQ(engine_.stats().reclaims, 1u);
  EXPECT_EQ(engine_.PreemptionsInDay("spot", 1000), 1);
}

TEST_F(EngineTest, PreemptsTheSmallestFootprintNotTheBigGang) {
  Nodes(3);
  ASSERT_TRUE(engine_.Enqueue(Gang("big", 2, 8, kStandard, 0, 10000)).ok());
  ASSERT_TRUE(engine_.Enqueue(Gang("small", 1, 8, kStandard, 0, 10000)).ok());
  engine_.Pass(0, driver_);
  ASSERT_TRUE(Started("big") && Started("small"));
  // Losing "big" would cost more (16 GPUs to wait for again) even with less work at risk:
  // other work waits too ("queued"), so the GPUs "big" frees beyond the preemptor's one are
  // not kept for it.
  driver_.risk["big"] = 0;
  driver_.risk["small"] = 8 * 100;
  ASSERT_TRUE(engine_.Enqueue(Gang("queued", 4, 8, kStandard, 50, 10000)).ok());
  ASSERT_TRUE(engine_.Enqueue(Gang("urgent", 1, 1, kHigh, 100, 600)).ok());
  engine_.Pass(100, driver_);
  EXPECT_TRUE(Started("urgent"));
  EXPECT_EQ(driver_.evicted, std::vector<std::string>{"small"});
  const Admission* a = driver_.AdmissionOf("urgent");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->kind, AdmitKind::kPreempting);
  EXPECT_NE(a->why.find("benefit"), std::string::npos) << a->why;
}

TEST_F(EngineTest, DeclinesAPreemptionThatCostsMoreThanItGains) {
  Nodes(1);
  ASSERT_TRUE(engine_.Enqueue(Gang("spot", 1, 8, kSpot, 0, 9000, true)).ok());
  engine_.Pass(0, driver_);
  // Standard, 1 GPU, would wait 2.5 h (> its 2 h target): benefit 10 x 1 x 9000 = 90,000.
  // The spot job would wait for its 8 GPUs until the preemptor ends (10 h): cost
  // 1 x 8 x (30 + 36,000) > 90,000. It waits.
  ASSERT_TRUE(engine_.Enqueue(Gang("std", 1, 1, kStandard, 1, 36000)).ok());
  engine_.Pass(1, driver_);
  EXPECT_FALSE(Started("std"));
  EXPECT_TRUE(driver_.evicted.empty());
  EXPECT_EQ(engine_.stats().preemptions_declined, 1u);
  EXPECT_NE(engine_.WhyWaiting(GangKey("std")).find("declined: benefit 9e+04 <= cost"), std::string::npos)
      << engine_.WhyWaiting(GangKey("std"));
}

TEST_F(EngineTest, WaitsWithinItsTierTargetInsteadOfPreempting) {
  Nodes(1);
  ASSERT_TRUE(engine_.Enqueue(Gang("spot", 1, 8, kSpot, 0, 300, true)).ok());
  engine_.Pass(0, driver_);
  // High's target is 10 minutes; the spot job ends in 5.
  ASSERT_TRUE(engine_.Enqueue(Gang("high", 1, 8, kHigh, 1, 600)).ok());
  engine_.Pass(1, driver_);
  EXPECT_FALSE(Started("high"));
  EXPECT_TRUE(driver_.evicted.empty());
}

TEST_F(EngineTest, MinimumRunTimeAndDailyCapProtectAPreemptedJob) {
  EnginePolicy policy = RulesPolicy();
  for (TierPolicy& t : policy.tiers)
    if (t.name == "spot") t.max_preemptions_per_day = 2;
  engine_ = Engine(policy);
  Nodes(1);
  auto victim = [](const std::string& attempt, double submitted) {
    GangRequest g = Gang(attempt, 1, 8, kSpot, submitted, 100000, true);
    g.job = "victim";
    return g;
  };
  ASSERT_TRUE(engine_.Enqueue(victim("v-a0", 0)).ok());
  engine_.Pass(0, driver_);
  // First preemption: the victim was never preempted, so no minimum run applies.
  ASSERT_TRUE(engine_.Enqueue(Gang("h1", 1, 8, kHigh, 10, 100)).ok());
  engine_.Pass(10, driver_);
  ASSERT_TRUE(Started("h1"));
  ASSERT_TRUE(engine_.Enqueue(victim("v-a1", 0)).ok());
  Finish("h1");
  engine_.Pass(110, driver_);
  ASSERT_TRUE(Started("v-a1"));
  // Second: it ran 90 s of its 900 s minimum; the engine asks to be woken when it may.
  ASSERT_TRUE(engine_.Enqueue(Gang("h2", 1, 8, kHigh, 200, 100)).ok());
  engine_.Pass(200, driver_);
  EXPECT_FALSE(Started("h2"));
  ASSERT_TRUE(engine_.NextWake().has_value());
  EXPECT_DOUBLE_EQ(*engine_.NextWake(), 110 + 900);
  EXPECT_NE(engine_.WhyWaiting(GangKey("h2")).find("minimum run time"), std::string::npos)
      << engine_.WhyWaiting(GangKey("h2"));
  engine_.Pass(1010, driver_);
  ASSERT_TRUE(Started("h2"));
  EXPECT_EQ(engine_.PreemptionsInDay("victim", 1010), 2);
  // Third: the cap (2 a day) holds until the first one is a day old.
  ASSERT_TRUE(engine_.Enqueue(victim("v-a2", 0)).ok());
  Finish("h2");
  engine_.Pass(1110, driver_);
  ASSERT_TRUE(Started("v-a2"));
  ASSERT_TRUE(engine_.Enqueue(Gang("h3", 1, 8, kHigh, 5000, 100)).ok());
  engine_.Pass(5000, driver_);
  EXPECT_FALSE(Started("h3"));
  ASSERT_TRUE(engine_.NextWake().has_value());
  EXPECT_DOUBLE_EQ(*engine_.NextWake(), 10 + 86400);
}

TEST_F(EngineTest, GracefulEvictionMakesThePreemptorWaitForTheCheckpoint) {
  Nodes(1);
  driver_.graceful_notice = 120;
  ASSERT_TRUE(engine_.Enqueue(Gang("spot", 1, 8, kSpot, 0, 100000, true)).ok());
  engine_.Pass(0, driver_);
  // Losing 40,000 GPU-s (valued at high's weight) costs more than making the 8-GPU high
  // gang wait 120 s for a checkpoint: graceful.
  driver_.risk["spot"] = 40000;
  ASSERT_TRUE(engine_.Enqueue(Gang("high", 1, 8, kHigh, 10, 100)).ok());
  engine_.Pass(10, driver_);
  // Asked to checkpoint: the victim still holds its GPUs, the preemptor waits for it and
  // evicts nothing else meanwhile.
  EXPECT_EQ(driver_.evicted, std::vector<std::string>{"spot"});
  EXPECT_FALSE(Started("high"));
  EXPECT_NE(engine_.WhyWaiting(GangKey("high")).find("to checkpoint and stop"), std::string::npos)
      << engine_.WhyWaiting(GangKey("high"));
  ASSERT_TRUE(engine_.NextWake().has_value());
  EXPECT_DOUBLE_EQ(*engine_.NextWake(), 10 + 120 + 60);
  engine_.Pass(50, driver_);
  EXPECT_EQ(driver_.evicted.size(), 1u);
  EXPECT_EQ(engine_.stats().preemptions, 1u);
  // It stopped: the GPUs are free and the preemptor takes them.
  Finish("spot");
  engine_.Pass(130, driver_);
  EXPECT_TRUE(Started("high"));
}

TEST_F(EngineTest, EvictsAtOnceWhenLittleWorkIsAtRisk) {
  Nodes(1);
  driver_.graceful_notice = 120;
  ASSERT_TRUE(engine_.Enqueue(Gang("spot", 1, 8, kSpot, 0, 100000, true)).ok());
  engine_.Pass(0, driver_);
  driver_.risk["spot"] = 8 * 30;  // checkpointed 30 s ago: cheaper to lose than to wait for
  ASSERT_TRUE(engine_.Enqueue(Gang("high", 1, 8, kHigh, 10, 100)).ok());
  engine_.Pass(10, driver_);
  EXPECT_TRUE(Started("high"));
  EXPECT_EQ(driver_.evicted, std::vector<std::string>{"spot"});
}

TEST_F(EngineTest, SharesPackOntoOnePartlyUsedGpu) {
  Nodes(2);
  GangRequest a = Gang("a", 1, 1, kStandard, 0, 100, false, "");
  a.milli = 500;
  GangRequest b = a;
  b.key = GangKey("b");
  ASSERT_TRUE(engine_.Enqueue(a).ok());
  ASSERT_TRUE(engine_.Enqueue(b).ok());
  engine_.Pass(0, driver_);
  ASSERT_TRUE(Started("a") && Started("b"));
  const Admission* pa = driver_.AdmissionOf("a");
  const Admission* pb = driver_.AdmissionOf("b");
  ASSERT_TRUE(pa->share && pb->share);
  EXPECT_EQ(pa->share->first, pb->share->first);
  EXPECT_EQ(pa->share->second, pb->share->second);
  EXPECT_EQ(driver_.state().FreeGpus(), 15);
}

TEST_F(EngineTest, ArrivalsOnlyPassPlansOnlyTheNewGangs) {
  Nodes(2);
  // 4 GPUs busy on each node (pods the engine does not know): 8 free, but not on one node.
  for (int n = 0; n < 2; ++n) {
    ASSERT_TRUE(driver_.mutable_state()
                    .Allocate(PodUid(fmt::format("busy-{}", n)), NodeName(fmt::format("n{}", n)),
                              placement::AllGpus(4), kStandard)
                    .ok());
  }
  ASSERT_TRUE(engine_.Enqueue(Gang("w1", 1, 8, kStandard, 1, 100)).ok());
  engine_.Pass(1, driver_);
  const uint64_t after_full = engine_.stats().plan_calls;
  EXPECT_EQ(after_full, 1u);  // planned, did not fit
  ASSERT_TRUE(engine_.Enqueue(Gang("w2", 1, 2, kStandard, 2, 100)).ok());
  engine_.Pass(2, driver_, Engine::Scope::kArrivalsOnly);
  // Only the arrival was planned (and started); w1 was not tried again.
  EXPECT_TRUE(Started("w2"));
  EXPECT_EQ(engine_.stats().plan_calls, after_full + 1);
  // w2 ends; the full pass after it tries w1 again.
  Finish("w2");
  engine_.Pass(3, driver_);
  EXPECT_EQ(engine_.stats().plan_calls, after_full + 2);
  EXPECT_FALSE(Started("w1"));
}

TEST_F(EngineTest, WithoutBackfillTheHeadBlocksEverythingBehindIt) {
  EnginePolicy policy = RulesPolicy();
  policy.backfill = false;
  engine_ = Engine(policy);
  Nodes(2);
  ASSERT_TRUE(engine_.Enqueue(Gang("x", 1, 8, kStandard, 0, 1000)).ok());
  engine_.Pass(0, driver_);
  ASSERT_TRUE(engine_.Enqueue(Gang("head", 2, 8, kStandard, 1, 500)).ok());
  ASSERT_TRUE(engine_.Enqueue(Gang("short", 1, 2, kStandard, 2, 10)).ok());
  engine_.Pass(2, driver_);
  EXPECT_FALSE(Started("short"));
}

TEST_F(EngineTest, ShippedDefaultsLetLaterGangsRunPastABlockedStandardGang) {
  engine_ = Engine(EnginePolicy::Defaults());
  Nodes(2);
  ASSERT_TRUE(engine_.Enqueue(Gang("x", 1, 8, kStandard, 0, 1000)).ok());
  engine_.Pass(0, driver_);
  ASSERT_TRUE(engine_.Enqueue(Gang("big", 2, 8, kStandard, 1, 500)).ok());
  ASSERT_TRUE(engine_.Enqueue(Gang("long", 1, 8, kStandard, 2, 5000)).ok());
  engine_.Pass(2, driver_);
  // Standard never holds a reservation by default: the long job takes the free node.
  EXPECT_TRUE(Started("long"));
  EXPECT_TRUE(engine_.Heads().empty());
  // A high gang does hold one, once it waited an hour (issue 25: not for every short wait).
  ASSERT_TRUE(engine_.Enqueue(Gang("hi", 2, 8, kHigh, 3, 500)).ok());
  driver_.risk["x"] = 1e9;  // too costly to preempt: it waits, then as the head
  driver_.risk["long"] = 1e9;
  engine_.Pass(3, driver_);
  EXPECT_TRUE(engine_.Heads().empty());
  engine_.Pass(3 + 3599, driver_);
  EXPECT_TRUE(engine_.Heads().empty());
  engine_.Pass(3 + 3600, driver_);
  ASSERT_EQ(engine_.Heads().size(), 1u);
  EXPECT_EQ(engine_.Heads()[0].head.str(), "hi");
}

TEST_F(EngineTest, RejectsMalformedAndDuplicateGangsAndChangesNothing) {
  Nodes(1);
  EXPECT_EQ(engine_.Enqueue(Gang("bad", 0, 8, kStandard, 0)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(engine_.Enqueue(Gang("bad", 1, 65, kStandard, 0)).code(), StatusCode::kInvalidArgument);
  GangRequest share = Gang("bad", 2, 1, kStandard, 0);
  share.milli = 300;
  EXPECT_EQ(engine_.Enqueue(share).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(engine_.waiting(), 0u);
  ASSERT_TRUE(engine_.Enqueue(Gang("ok", 1, 8, kStandard, 0)).ok());
  EXPECT_EQ(engine_.Enqueue(Gang("ok", 1, 8, kStandard, 0)).code(), StatusCode::kAlreadyExists);
  engine_.Pass(0, driver_);
  EXPECT_EQ(engine_.Enqueue(Gang("ok", 1, 8, kStandard, 0)).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(engine_.Remove(GangKey("nope")).code(), StatusCode::kNotFound);
}

// A driver that removes a waiting gang (and queues another) while the engine admits one:
// the pass must not try the removed gang, and tries the new one only in the next pass.
class RemovingDriver : public FakeDriver {
 public:
  std::optional<std::vector<PodUid>> Admit(const GangRequest& gang, const Admission& a) override {
    if (gang.key == GangKey("a")) {
      EXPECT_TRUE(engine->Remove(GangKey("c")).ok());
      EXPECT_TRUE(engine->Enqueue(Gang("d", 1, 2, kStandard, 0)).ok());
    }
    return FakeDriver::Admit(gang, a);
  }
  Engine* engine = nullptr;
};

TEST(EngineWalkTest, AGangRemovedDuringThePassIsNotTried) {
  RemovingDriver driver;
  testing::AddRack(driver.mutable_state(), "n", 1, "r0");
  Engine engine(RulesPolicy());
  driver.engine = &engine;
  ASSERT_TRUE(engine.Enqueue(Gang("a", 1, 4, kHigh, 0)).ok());
  ASSERT_TRUE(engine.Enqueue(Gang("b", 1, 8, kStandard, 1)).ok());
  ASSERT_TRUE(engine.Enqueue(Gang("c", 1, 2, kStandard, 2)).ok());
  engine.Pass(10, driver);
  EXPECT_TRUE(engine.IsRunning(GangKey("a")));
  EXPECT_FALSE(engine.IsRunning(GangKey("c")));
  EXPECT_FALSE(engine.IsWaiting(GangKey("c")));
  EXPECT_EQ(engine.WhyWaiting(GangKey("c")), "");
  EXPECT_TRUE(engine.IsWaiting(GangKey("d")));  // queued during the pass: next pass
  EXPECT_FALSE(engine.IsRunning(GangKey("d")));
  EXPECT_EQ(engine.waiting(), 2u);
  engine.Pass(20, driver);
  EXPECT_TRUE(engine.IsRunning(GangKey("d")));  // first submitted: ahead of b, fits the 4 left
}

// Reasons are formatted once per distinct text in a pass: each gang still shows its own
// GPU count and expected wait.
TEST(EngineWalkTest, WaitingReasonsAreEachGangsOwn) {
  FakeDriver driver;
  testing::AddRack(driver.mutable_state(), "n", 1, "r0");
  EnginePolicy policy = RulesPolicy();
  for (TierPolicy& t : policy.tiers) t.reserve_after_s = -1;  // no heads: "does not fit now"
  ASSERT_TRUE(policy.Validate().ok());
  Engine engine(policy);
  ASSERT_TRUE(engine.Enqueue(Gang("r", 1, 8, kStandard, 0, 3600)).ok());
  engine.Pass(0, driver);
  ASSERT_TRUE(engine.IsRunning(GangKey("r")));
  ASSERT_TRUE(engine.Enqueue(Gang("w1", 1, 2, kStandard, 1)).ok());
  ASSERT_TRUE(engine.Enqueue(Gang("w2", 1, 2, kStandard, 2)).ok());
  ASSERT_TRUE(engine.Enqueue(Gang("w3", 1, 4, kStandard, 3)).ok());
  ASSERT_TRUE(engine.Enqueue(Gang("w4", 1, 8, kStandard, 4)).ok());
  engine.Pass(600, driver);
  EXPECT_EQ(engine.WhyWaiting(GangKey("w1")), "does not fit now (2 GPUs, 0 free); expected wait 50m");
  EXPECT_EQ(engine.WhyWaiting(GangKey("w2")), "does not fit now (2 GPUs, 0 free); expected wait 50m");
  EXPECT_EQ(engine.WhyWaiting(GangKey("w3")), "does not fit now (4 GPUs, 0 free); expected wait 50m");
  // 2 + 2 + 4 ahead of it and its own 8: more than ever comes free.
  EXPECT_EQ(engine.WhyWaiting(GangKey("w4")).rfind("does not fit now (8 GPUs, 0 free); expected wait ", 0), 0u);
  EXPECT_NE(engine.WhyWaiting(GangKey("w4")), "does not fit now (8 GPUs, 0 free); expected wait 50m");
}

}  // namespace
}  // namespace phalanx::scheduling
