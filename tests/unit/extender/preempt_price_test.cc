// The preempt verb prices victims as the scheduling engine does (docs/algorithms.md §8.3):
// the footprint rule, the minimum run and daily cap, and the same choice as the engine's own
// preemption on the same cluster.
#include <gtest/gtest.h>

#include "tests/unit/extender/test_cluster.h"

namespace phalanx::extender::testing {
namespace {

using namespace std::chrono_literals;

constexpr int kHigh = 10000;
constexpr int kStandard = 1000;
constexpr int kSpot = 100;

PodInfo Running(PodInfo p, const std::string& node, TestCluster& c) {
  p.gated = false;
  p.node_name = node;
  p.phase = PodPhase::kRunning;
  p.start_time = c.clock.WallNow();
  return p;
}

PreemptArgs Offer(const PodInfo& preemptor, const std::map<std::string, std::vector<std::string>>& victims) {
  PreemptArgs a;
  a.pod = preemptor;
  a.victims = victims;
  return a;
}

TEST(PreemptPriceTest, AJustCheckpointed256GpuGangIsNotChosenForAOneGpuPod) {
  TestCluster c;
  std::map<std::string, std::vector<std::string>> offered;
  // "big": a standard 256-GPU TrainingJob gang (32 x 8) that just checkpointed (nothing at risk).
  for (int i = 0; i < 32; ++i) {
    const std::string node = "n" + std::to_string(i);
    ASSERT_TRUE(c.ext.OnNode(DgxNode(node)).ok());
    PodInfo p = Running(GangPod("big", i, 8, 32, kStandard), node, c);
    p.training_job = "big-job";
    c.ext.OnPod(p);
    offered[node] = {p.uid.str()};
  }
  c.ext.OnTrainingJob({"default", "big-job", 0, 0, ""});
  // "small": a spot 8-GPU job with 5 minutes of work at risk, on the last node.
  ASSERT_TRUE(c.ext.OnNode(DgxNode("n32")).ok());
  PodInfo small = Running(GangPod("small", 0, 8, 1, kSpot), "n32", c);
  small.training_job = "small-job";
  c.ext.OnPod(small);
  c.ext.OnTrainingJob({"default", "small-job", 8 * 300, 0, ""});
  offered["n32"] = {small.uid.str()};
  c.ext.Tick();  // the engine adopts both

  PreemptResult r = c.ext.Preempt(Offer(GpuPod("one", 1, kHigh), offered));
  ASSERT_EQ(r.victims.size(), 1u);
  ASSERT_TRUE(r.victims.contains("n32"));
  EXPECT_EQ(r.victims["n32"], std::vector<std::string>{small.uid.str()});
  c.ext.DrainForTest();
  EXPECT_TRUE(c.writer.CallsOf("evict").empty()) << "no member of the big gang is touched";

  // Only the big gang is offered: it is not worth it (its 256 GPUs would wait far longer
  // than the pod gains), so kube-scheduler gets no candidate at all.
  std::map<std::string, std::vector<std::string>> big_only = offered;
  big_only.erase("n32");
  PreemptResult none = c.ext.Preempt(Offer(GpuPod("two", 1, kHigh), big_only));
  EXPECT_TRUE(none.victims.empty());
  c.ext.DrainForTest();
  EXPECT_TRUE(c.writer.CallsOf("evict").empty());
}

// One 8-GPU node; victims are single spot pods of one TrainingJob (its history is the job's).
// Spot's weight is 1 here so that every eviction pays and only the guards decide.
struct GuardFixture : ::testing::Test {
  static ExtenderConfig TwoADay() {
    ExtenderConfig config = DefaultConfig();
    for (auto& t : config.scheduling.tiers) {
      if (t.name != "spot") continue;
      t.max_preemptions_per_day = 2;
      t.weight = 1;
    }
    return config;
  }
  TestCluster c{TwoADay()};
  int attempt = 0;
  void SetUp() override {
    ASSERT_TRUE(c.ext.OnNode(DgxNode("n0")).ok());
    c.ext.OnTrainingJob({"default", "victim-job", 0, 0, ""});
  }
  // A new attempt of the victim job takes the node.
  PodInfo Rerun() {
    PodInfo p = Running(GpuPod("victim-" + std::to_string(attempt++), 8, kSpot), "n0", c);
    p.training_job = "victim-job";
    c.ext.OnPod(p);
    return p;
  }
  PreemptResult Preempt(const PodInfo& victim) {
    return c.ext.Preempt(Offer(GpuPod("high-" + std::to_string(attempt), 8, kHigh), {{"n0", {victim.uid.str()}}}));
  }
};

TEST_F(GuardFixture, AVictimInsideItsMinimumRunOrOverItsDailyCapIsNotOffered) {
  PodInfo v = Rerun();
  // Never preempted: no minimum run applies.
  ASSERT_EQ(Preempt(v).victims["n0"], std::vector<std::string>{v.uid.str()});
  c.ext.OnPodDeleted(v.uid);
  c.clock.Advance(1min);
  v = Rerun();
  c.clock.Advance(10min);
  // Preempted once: its new attempt ran 10 of its 15 minutes.
  EXPECT_TRUE(Preempt(v).victims.empty());
  c.clock.Advance(5min + 1s);
  ASSERT_EQ(Preempt(v).victims["n0"], std::vector<std::string>{v.uid.str()});
  c.ext.OnPodDeleted(v.uid);
  v = Rerun();
  c.clock.Advance(16min);
  // Past its minimum run, but preempted twice in 24 hours: the cap (2) holds it ...
  EXPECT_TRUE(Preempt(v).victims.empty());
  // ... until the first of them is a day old.
  c.clock.Advance(24h - 27min);
  ASSERT_EQ(Preempt(v).victims["n0"], std::vector<std::string>{v.uid.str()});
}

// `phalanx explain` shows what protects a running gang as a victim: its minimum run after a
// preemption and its daily cap, with the wall-clock time they end.
TEST(PreemptPriceTest, ExplainShowsAVictimsMinimumRunAndDailyCap) {
  auto scenario = [](TestCluster& c) {
    EXPECT_TRUE(c.ext.OnNode(DgxNode("n0")).ok());
    c.ext.OnTrainingJob({"default", "v-job", 0, 0, ""});
    PodInfo v = Running(GangPod("v", 0, 8, 1, kSpot), "n0", c);
    v.training_job = "v-job";
    c.ext.OnPod(v);
    c.ext.Tick();
    EXPECT_NE(c.ext.Explain("default/v-0").find("as a preemption victim (tier spot): preemptible now (preempted 0/"),
              std::string::npos)
        << c.ext.Explain("default/v-0");
    // Preempted through the verb at 11:06:40 UTC; its next attempt starts a minute later.
    EXPECT_FALSE(c.ext.Preempt(Offer(GpuPod("hi", 8, kHigh), {{"n0", {v.uid.str()}}})).victims.empty());
    c.ext.OnPodDeleted(v.uid);
    c.ext.Tick();
    c.clock.Advance(1min);
    PodInfo again = Running(GangPod("v", 1, 8, 1, kSpot), "n0", c);
    again.training_job = "v-job";
    c.ext.OnPod(again);
    c.ext.Tick();
    return c.ext.Explain("default/v-1");
  };
  TestCluster once_a_day;  // the shipped defaults: at most once a day
  std::string why = scenario(once_a_day);
  EXPECT_NE(why.find("as a preemption victim (tier spot): preempted 1/1 today: not preemptible until 11:06:40 UTC"),
            std::string::npos)
      << why;
  TestCluster twice{GuardFixture::TwoADay()};
  why = scenario(twice);
  EXPECT_NE(why.find("as a preemption victim (tier spot): preemptible after 11:22:40 UTC (min run 15m; preempted 1/2 today)"),
            std::string::npos)
      << why;
}

// The engine's own preemption (a gated high gang, admitted by Tick) and the verb (a pod of the
// same shape through kube-scheduler) pick the same victim on the same cluster.
TEST(PreemptPriceTest, TheReplyIsWhatTheEngineWouldPickOnTheSameState) {
  auto build = [](TestCluster& c) {
    // Three spot gangs of one 8-GPU member; the middle one is cheapest to lose.
    const double risk[] = {8 * 900, 8 * 60, 8 * 2400};
    for (int i = 0; i < 3; ++i) {
      const std::string node = "n" + std::to_string(i), gang = "spot" + std::to_string(i);
      ASSERT_TRUE(c.ext.OnNode(DgxNode(node)).ok());
      PodInfo p = Running(GangPod(gang, 0, 8, 1, kSpot), node, c);
      p.training_job = gang + "-job";
      c.ext.OnPod(p);
      c.ext.OnTrainingJob({"default", gang + "-job", risk[i], 0, ""});
    }
    c.ext.Tick();
    c.clock.Advance(20min);
  };
  TestCluster engine_side, verb_side;
  build(engine_side);
  build(verb_side);

  engine_side.ext.OnPod(GangPod("urgent", 0, 8, 1, kHigh));
  engine_side.ext.Tick();
  engine_side.ext.DrainForTest();
  const auto evicted = engine_side.writer.CallsOf("evict");
  ASSERT_EQ(evicted.size(), 1u);
  EXPECT_EQ(evicted[0].target, "default/spot1-0");

  PreemptResult r = verb_side.ext.Preempt(Offer(GpuPod("urgent", 8, kHigh), {{"n0", {"uid-spot0-0"}},
                                                                            {"n1", {"uid-spot1-0"}},
                                                                            {"n2", {"uid-spot2-0"}}}));
  ASSERT_EQ(r.victims.size(), 1u);
  ASSERT_TRUE(r.victims.contains("n1"));
  EXPECT_EQ(r.victims["n1"], std::vector<std::string>{"uid-spot1-0"});
}

}  // namespace
}  // namespace phalanx::extender::testing
