// ChoosePricedPreemption: the one victim choice and price that the engine's own
// preemption and the extender's preempt verb share (docs/algorithms.md §8.3).
#include <deque>

#include <map>

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "core/scheduling/engine.h"
#include "core/scheduling/preemption_cost.h"
#include "tests/unit/core/scheduling/fake_driver.h"

namespace phalanx::scheduling {
namespace {

using testing::kHigh;
using testing::kSpot;
using testing::kStandard;

constexpr placement::GpuMask kAll8 = 0xFF;

class PricedChoiceTest : public ::testing::Test {
 protected:
  PricedChoiceTest() : state_(testing::StandardLevels()) {}

  // `nodes` full nodes of 8 GPUs, from node `first`, held by one gang of `priority`.
  VictimFacts Hold(const std::string& key, int first, int nodes, int priority) {
    VictimFacts v;
    v.key = GangKey(key);
    v.priority = priority;
    v.gpus = 8 * nodes;
    std::vector<PodUid>& pods = pods_.emplace_back();
    for (int n = first; n < first + nodes; ++n) {
      PodUid pod(fmt::format("{}-{}", key, n));
      EXPECT_TRUE(state_.Allocate(pod, NodeName(fmt::format("n{}", n)), kAll8, priority).ok());
      pods.push_back(pod);
    }
    v.pods = pods;
    v.remaining_s = 10 * 3600;
    v.expected_wait_s = 3600;
    return v;
  }
  PreemptorFacts Preemptor(int gpus, int priority, double wait) const {
    PreemptorFacts p;
    p.spec.key = GangKey("preemptor");
    p.spec.gpus_per_member = gpus;
    p.spec.pool = "H100";
    p.priority = priority;
    p.expected_wait_s = wait;
    return p;
  }

  placement::ClusterState state_;
  std::deque<std::vector<PodUid>> pods_;  // what the facts' pods (views) name
  EnginePolicy policy_ = EnginePolicy::Defaults();
};

TEST_F(PricedChoiceTest, NeverTheBigGangForAOneGpuPodWhileASmallerSetMakesRoom) {
  testing::AddRack(state_, "n", 33, "r0");
  // A 256-GPU standard gang that just checkpointed, and an 8-GPU spot job with a lot of
  // work at risk.
  std::vector<VictimFacts> v = {Hold("big", 0, 32, kStandard), Hold("small", 32, 1, kSpot)};
  v[0].gpu_seconds_at_risk = 0;
  v[0].expected_wait_s = 600;
  v[1].gpu_seconds_at_risk = 8 * 3600 * 8;
  // By price alone the big gang would be the cheaper answer...
  const VictimPrice big{.gpus = 256, .weight = 10, .lost_work_weight = 100, .expected_wait_s = 600};
  const VictimPrice small{.gpus = 8, .weight = 1, .lost_work_weight = 100, .gpu_seconds_at_risk = 8 * 3600 * 8,
                          .expected_wait_s = 3600};
  ASSERT_LT(VictimCost(big, policy_.restart_overhead_s), VictimCost(small, policy_.restart_overhead_s));
  // ... but a set close to the need exists: it is the one chosen (and priced).
  auto c = ChoosePricedPreemption(policy_, state_, Preemptor(1, kHigh, 7 * 86400), v);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE(c->decision.has_value());
  EXPECT_EQ(c->decision->victims, std::vector<int>{1});
  EXPECT_FALSE(c->pays()) << "it loses more than a 1-GPU pod gains: declined, not replaced by the big gang";
  EXPECT_EQ(c->outcome, PricedPreemption::Outcome::kDeclined);
  EXPECT_NE(c->why.find("declined"), std::string::npos) << c->why;

  // With nothing at risk the small victim pays, and is still the choice.
  v[1].gpu_seconds_at_risk = 0;
  c = ChoosePricedPreemption(policy_, state_, Preemptor(1, kHigh, 7 * 86400), v);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->pays()) << c->why;
  EXPECT_EQ(c->decision->victims, std::vector<int>{1});

  // Only the big gang can make room for a 16-node preemptor: then it is chosen.
  c = ChoosePricedPreemption(policy_, state_, [&] {
    PreemptorFacts p = Preemptor(8, kHigh, 7 * 86400);
    p.spec.members = 16;
    return p;
  }(), v);
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c->decision.has_value());
  EXPECT_EQ(c->decision->victims, std::vector<int>{0});
}

// Reclaims (a head taking back preemptible backfill, a queue its lent quota) choose their
// victims by the same rule (issue 25: one victim choice everywhere), but neither the
// preemptor's tier nor the price gates them, and the caller's candidates of any tier count.
TEST_F(PricedChoiceTest, AReclaimChoosesByTheSameRuleWithoutPayingForItself) {
  testing::AddRack(state_, "n", 33, "r0");
  std::vector<VictimFacts> v = {Hold("big", 0, 32, kStandard), Hold("small", 32, 1, kHigh)};
  v[0].gpu_seconds_at_risk = 0;
  v[0].expected_wait_s = 600;
  v[1].gpu_seconds_at_risk = 8 * 3600 * 8;  // far more than a standard 1-GPU gang gains
  PreemptorFacts p = Preemptor(1, kStandard, 60);  // standard never preempts, and waits 1 min
  auto c = ChoosePricedPreemption(policy_, state_, p, v);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->outcome, PricedPreemption::Outcome::kTierNeverPreempts);
  p.reclaim = true;
  c = ChoosePricedPreemption(policy_, state_, p, v);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE(c->decision.has_value()) << c->why;
  // The victim close to the need, although of a higher tier than the preemptor and although
  // the big gang is the cheaper one by price alone; chosen although it does not pay.
  EXPECT_EQ(c->decision->victims, std::vector<int>{1});
  EXPECT_EQ(c->outcome, PricedPreemption::Outcome::kPays);
  EXPECT_FALSE(c->price.pays()) << c->why;
  // Graceful where the checkpoint is cheaper than the lost work, as for any preemption.
  v[1].notice_s = 60;
  c = ChoosePricedPreemption(policy_, state_, p, v);
  ASSERT_TRUE(c.ok() && c->decision.has_value());
  EXPECT_TRUE(c->graceful[1]);
}

TEST_F(PricedChoiceTest, TheWorkedExamplePaysAndItsSmallVariantIsDeclined) {
  testing::AddRack(state_, "n", 1, "r0");
  // §8.3: a high 8-GPU gang waiting 1 h; a standard 8-GPU gang 20 min past its checkpoint
  // that would wait 3 h to run again.
  std::vector<VictimFacts> v = {Hold("std", 0, 1, kStandard)};
  v[0].gpu_seconds_at_risk = 8 * 1200;
  v[0].expected_wait_s = 3 * 3600;
  auto c = ChoosePricedPreemption(policy_, state_, Preemptor(8, kHigh, 3600), v);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->pays());
  EXPECT_DOUBLE_EQ(c->price.benefit, 2880000);
  EXPECT_DOUBLE_EQ(c->price.cost, 100 * 9600 + 10 * 8 * (30 + 10800));
  EXPECT_FALSE(c->graceful[0]);
  // Its GPUs come free anyway in 10 minutes: that is all a preemption could save.
  v[0].remaining_s = 600;
  c = ChoosePricedPreemption(policy_, state_, Preemptor(8, kHigh, 3600), v);
  ASSERT_TRUE(c.ok());
  EXPECT_DOUBLE_EQ(c->price.benefit, 100 * 8 * 600);
  EXPECT_EQ(c->outcome, PricedPreemption::Outcome::kDeclined);
}

TEST_F(PricedChoiceTest, GracefulWhenTheCheckpointWaitIsCheaperThanTheLostWork) {
  testing::AddRack(state_, "n", 1, "r0");
  std::vector<VictimFacts> v = {Hold("spot", 0, 1, kSpot)};
  v[0].notice_s = 60;
  v[0].gpu_seconds_at_risk = 8 * 3600;  // 100 x 28,800 lost > 100 x 8 x 60 waited
  auto c = ChoosePricedPreemption(policy_, state_, Preemptor(8, kHigh, 3600), v);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->pays());
  EXPECT_TRUE(c->graceful[0]);
  EXPECT_DOUBLE_EQ(c->price.cost, 100 * 8 * 60 + 3 * 8 * (30 + 3600));  // spot's weight: 3
  v[0].gpu_seconds_at_risk = 8 * 30;  // checkpointed 30 s ago: losing it is cheaper
  c = ChoosePricedPreemption(policy_, state_, Preemptor(8, kHigh, 3600), v);
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->graceful[0]);
}

TEST_F(PricedChoiceTest, TierTargetsDecideBeforeAnyVictimIsLookedAt) {
  testing::AddRack(state_, "n", 1, "r0");
  std::vector<VictimFacts> v = {Hold("spot", 0, 1, kSpot)};
  auto c = ChoosePricedPreemption(policy_, state_, Preemptor(8, kStandard, 86400), v);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->outcome, PricedPreemption::Outcome::kTierNeverPreempts) << "standard's target is -1 by default";
  EnginePolicy tenMinutes = policy_;
  for (TierPolicy& t : tenMinutes.tiers)
    if (t.name == "high") t.target_wait_s = 600;
  c = ChoosePricedPreemption(tenMinutes, state_, Preemptor(8, kHigh, 300), v);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->outcome, PricedPreemption::Outcome::kWithinTarget);
  EXPECT_FALSE(c->decision.has_value());
  c = ChoosePricedPreemption(policy_, state_, Preemptor(8, kHigh, 300), {});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->outcome, PricedPreemption::Outcome::kNoVictimSet);
}

TEST_F(PricedChoiceTest, OnlyTheOfferedDomainsAreConsidered) {
  testing::AddRack(state_, "n", 2, "r0");
  std::vector<VictimFacts> v = {Hold("cheap", 0, 1, kSpot), Hold("dear", 1, 1, kSpot)};
  v[1].gpu_seconds_at_risk = 1000;
  PreemptorFacts p = Preemptor(8, kHigh, 3600);
  p.spec.level = placement::testing::kHostname;
  p.spec.mode = placement::TopologyMode::kRequired;
  auto c = ChoosePricedPreemption(policy_, state_, p, v);
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c->pays());
  EXPECT_EQ(c->decision->victims, std::vector<int>{0});
  p.domains = std::set<std::string>{"n1"};  // kube-scheduler offered only n1
  c = ChoosePricedPreemption(policy_, state_, p, v);
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c->pays());
  EXPECT_EQ(c->decision->victims, std::vector<int>{1});
  EXPECT_EQ(c->decision->plan.members[0].node.str(), "n1");
}

// --- the engine's side: standing, quotes for outside callers -----------------------------

TEST(EngineStandingTest, MinimumRunAndDailyCapAreShownAndRespectedByQuotes) {
  testing::FakeDriver driver;
  testing::AddRack(driver.mutable_state(), "n", 1, "r0");
  Engine engine;  // shipped defaults: spot min run 15 min, at most once a day
  GangRequest spot = testing::Gang("spot-a0", 1, 8, kSpot, 0, 100000, true);
  spot.job = "team/spot";
  ASSERT_TRUE(engine.Enqueue(spot).ok());
  engine.Pass(0, driver);
  ASSERT_TRUE(engine.IsRunning(GangKey("spot-a0")));
  auto s = engine.VictimStanding(GangKey("spot-a0"), 100);
  ASSERT_TRUE(s.has_value());
  EXPECT_TRUE(s->eligible);
  EXPECT_EQ(s->Describe(100), "preemptible now (preempted 0/1 today; min run 15m after a preemption)");
  EXPECT_FALSE(engine.VictimStanding(GangKey("nobody"), 100).has_value());

  // A preemption decided by the preempt verb counts like the engine's own.
  engine.RecordPreemption("team/spot", 200);
  s = engine.VictimStanding(GangKey("spot-a0"), 300);
  ASSERT_TRUE(s.has_value());
  EXPECT_FALSE(s->eligible);
  EXPECT_EQ(s->guard, PreemptionStanding::Guard::kDailyCap);
  EXPECT_DOUBLE_EQ(s->eligible_at, 200 + 86400);
  // Wall clock 2026-11-26 14:00:00 UTC at engine time 300.
  const double wall = 1795701600;
  EXPECT_EQ(s->Describe(300, wall), "preempted 1/1 today: not preemptible until 13:58:20 UTC");

  // Re-run after that preemption: the minimum run protects the new attempt first.
  const PreemptionStanding fresh = engine.StandingOf("team/spot", kSpot, 86000, 86700);
  EXPECT_EQ(fresh.guard, PreemptionStanding::Guard::kMinRun);
  EXPECT_DOUBLE_EQ(fresh.eligible_at, 86000 + 900);
  EXPECT_EQ(fresh.Describe(86700, wall + 86400),
            "preemptible after 14:03:20 UTC (min run 15m; preempted 0/1 today)");

  // The quote leaves the protected victim out and says when it may be chosen.
  GangRequest high = testing::Gang("high", 1, 8, kHigh, 300, 600);
  std::vector<VictimCandidate> candidates = {VictimCandidate{.key = GangKey("spot-a0")}};
  auto q = engine.QuotePreemption(high, 3600, candidates, 300, driver);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->outcome, PricedPreemption::Outcome::kNoVictimSet);
  EXPECT_EQ(q->ineligible, 1);
  ASSERT_TRUE(q->next_eligible.has_value());
  EXPECT_DOUBLE_EQ(*q->next_eligible, 200 + 86400);
  // A day later it may be chosen again, and the quote prices it.
  q = engine.QuotePreemption(high, 3600, candidates, 200 + 86400, driver);
  ASSERT_TRUE(q.ok());
  EXPECT_TRUE(q->pays()) << q->why;
  EXPECT_EQ(q->decision->victims, std::vector<int>{0});
}

TEST(EngineQuoteTest, AVictimsSpareGpusAreItsOwnOnlyWhileNothingElseWaits) {
  testing::FakeDriver driver;
  testing::AddRack(driver.mutable_state(), "n", 2, "r0");
  Engine engine;
  ASSERT_TRUE(engine.Enqueue(testing::Gang("train", 2, 8, kSpot, 0, 7200, true)).ok());
  engine.Pass(0, driver);
  ASSERT_TRUE(engine.IsRunning(GangKey("train")));
  const GangRequest infer = testing::Gang("infer", 1, 1, kHigh, 10, 3600);
  const std::vector<VictimCandidate> candidates = {VictimCandidate{.key = GangKey("train")}};
  // Nothing else waits: the 15 GPUs "infer" leaves are still free when it ends in an hour, so
  // "train" is back within the hour: 3 x 16 x (30 + 3,600) < 100 x 1 x 7,200 (spot's weight 3).
  auto q = engine.QuotePreemption(infer, 7200, candidates, 10, driver);
  ASSERT_TRUE(q.ok());
  EXPECT_TRUE(q->pays()) << q->why;
  EXPECT_DOUBLE_EQ(q->price.cost, 3 * 16 * (30 + 3600));
  // Another gang waits and would take them: "train" needs all 16 back and nothing it knows of
  // frees them (the wait horizon): declined.
  ASSERT_TRUE(engine.Enqueue(testing::Gang("other", 1, 8, kStandard, 5, 600)).ok());
  q = engine.QuotePreemption(infer, 7200, candidates, 10, driver);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->outcome, PricedPreemption::Outcome::kDeclined) << q->why;
}

}  // namespace
// A victim that may run in any pool waits, once re-queued, behind the gangs that need its pool
// just as a victim that names the pool does (issue 25, session 6): counting only the other
// any-pool gangs priced it at the preemptor's run time, made it the cheapest victim of all
// (432 of 682 evictions on the LLM mix at 3x) and its second wait fell on spot.
TEST(EngineQuoteTest, AnAnyPoolVictimWaitsBehindItsPoolsGangsLikeThePoolsOwn) {
  std::map<std::string, PricedPreemption> quotes;
  for (const std::string pool : {"", "H100"}) {
    SCOPED_TRACE(pool.empty() ? "any pool" : "H100");
    testing::FakeDriver driver;
    testing::AddRack(driver.mutable_state(), "n", 2, "r0");
    Engine engine;
    ASSERT_TRUE(engine.Enqueue(testing::Gang("other", 1, 8, kHigh, 0, 1000)).ok());
    ASSERT_TRUE(engine.Enqueue(testing::Gang("victim", 1, 8, kStandard, 5, 36000, false, pool)).ok());
    engine.Pass(5, driver);
    ASSERT_TRUE(engine.IsRunning(GangKey("victim")));
    // Two nodes, submitted before the victim, waiting for H100: the victim comes back behind it.
    ASSERT_TRUE(engine.Enqueue(testing::Gang("earlier", 2, 8, kStandard, 1, 3600)).ok());
    engine.Pass(10, driver);
    ASSERT_TRUE(engine.IsWaiting(GangKey("earlier")));
    const GangRequest high = testing::Gang("high", 1, 8, kHigh, 10, 600);
    const std::vector<VictimCandidate> candidates = {VictimCandidate{.key = GangKey("victim")}};
    auto q = engine.QuotePreemption(high, 1000, candidates, 10, driver);
    ASSERT_TRUE(q.ok());
    quotes[pool] = *q;
  }
  EXPECT_DOUBLE_EQ(quotes[""].price.cost, quotes["H100"].price.cost);
  EXPECT_EQ(quotes[""].outcome, quotes["H100"].outcome) << quotes[""].why;
  // Both are counted behind the earlier gang (less the preemptor's own 8 GPUs, which the
  // engine counts as waiting before them in a pass): 16 GPUs the pool frees nowhere in sight,
  // not worth 1,000 s of the high gang's wait.
  EXPECT_EQ(quotes[""].outcome, PricedPreemption::Outcome::kDeclined) << quotes[""].why;
}

}  // namespace phalanx::scheduling
