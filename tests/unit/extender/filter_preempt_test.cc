// Non-gang filter/prioritize/bind and tier preemption.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "tests/unit/extender/test_cluster.h"

namespace phalanx::extender::testing {
namespace {

using namespace std::chrono_literals;

TEST(FilterTest, SplitsNodesByWhetherPreemptionCanHelpAndNamesOnlyInputNodes) {
  TestCluster c;
  ASSERT_TRUE(c.ext.OnNode(DgxNode("free")).ok());
  ASSERT_TRUE(c.ext.OnNode(DgxNode("busy-low")).ok());
  ASSERT_TRUE(c.ext.OnNode(DgxNode("busy-high")).ok());
  ASSERT_TRUE(c.ext.OnNode(DgxNode("a100", "", "A100")).ok());
  ASSERT_TRUE(c.ext.OnNode(DgxNode("not-asked")).ok());
  c.ext.OnPod(GpuPod("low", 8, 100, "busy-low"));
  c.ext.OnPod(GpuPod("high", 8, 1000000, "busy-high"));
  PodInfo pod = GpuPod("p", 4, 10000);
  pod.pool_selector = "H100";
  FilterResult r = c.ext.Filter(Args(pod, {"free", "busy-low", "busy-high", "a100", "unknown"}));
  ASSERT_EQ(r.passed.size(), 1u);
  EXPECT_EQ(r.passed[0], "free");
  ASSERT_EQ(r.failed.size(), 1u);
  EXPECT_EQ(r.failed[0].first, "busy-low");
  std::set<std::string_view> unresolvable;
  for (const auto& [n, why] : r.unresolvable) unresolvable.insert(n);
  EXPECT_EQ(unresolvable, (std::set<std::string_view>{"busy-high", "a100", "unknown"}));
  const std::string encoded = EncodeFilterResult(r);
  EXPECT_EQ(encoded.find("not-asked"), std::string::npos);
}

// A full cluster: every node is refused, and the reply is what kube-scheduler needs (each node
// in the right map with a reason) without each node's numbers: one short text per kind of
// refusal, shared by every node refused that way. The numbers stay in the explanation.
TEST(FilterTest, FullClusterReplySharesOneShortReasonPerKindAndExplainKeepsTheNumbers) {
  TestCluster c;
  std::vector<std::string> names;
  for (int i = 0; i < 200; ++i) {
    names.push_back(fmt::format("node-{:03d}", i));
    ASSERT_TRUE(c.ext.OnNode(DgxNode(names.back())).ok());
    // 6 of 8 GPUs busy at an equal tier (priority 0) on most nodes; every tenth at a lower tier.
    c.ext.OnPod(GpuPod(fmt::format("busy-{}", i), 6, i % 10 == 0 ? -100 : 0, names.back()));
  }
  names.push_back("unknown-node");
  PodInfo pod = GpuPod("p", 4);
  FilterResult r = c.ext.Filter(Args(pod, names));
  EXPECT_TRUE(r.passed.empty());
  ASSERT_EQ(r.failed.size(), 20u);
  ASSERT_EQ(r.unresolvable.size(), 181u);
  for (const auto& [node, why] : r.failed) {
    EXPECT_EQ(why.str(), "Insufficient nvidia.com/gpu (held by lower tiers)") << node;
    EXPECT_EQ(why.id(), r.failed[0].second.id()) << "one shared string, not one per node";
  }
  for (const auto& [node, why] : r.unresolvable) {
    if (node == "unknown-node") continue;
    EXPECT_EQ(why.str(), "Insufficient nvidia.com/gpu") << node;
  }
  // ~40 bytes per refused node ("node-000":"Insufficient nvidia.com/gpu",), not ~100.
  EXPECT_LT(EncodeFilterResult(r).size(), 201u * 60);
  const std::string explained = c.ext.Explain("default/p");
  EXPECT_NE(explained.find("0 of 201 candidate nodes fit"), std::string::npos) << explained;
  EXPECT_NE(explained.find("180 node(s): Insufficient nvidia.com/gpu: requested 4, free 2 (in use by equal or higher "
                           "tiers)"),
            std::string::npos)
      << explained;
  EXPECT_NE(explained.find("20 node(s): Insufficient nvidia.com/gpu: requested 4, free 2 (6 held by lower tiers)"),
            std::string::npos)
      << explained;
  EXPECT_NE(explained.find("1 node(s): node has no GPUs known to phalanx"), std::string::npos) << explained;
}

TEST(FilterTest, PodsWithoutGpusPassEveryNode) {
  TestCluster c;
  FilterResult r = c.ext.Filter(Args(GpuPod("cpu", 0), {"x", "y"}));
  EXPECT_EQ(r.passed.size(), 2u);
}

TEST(FilterTest, PrioritizePrefersTheFullerNodeAndStaysInRange) {
  TestCluster c;
  ASSERT_TRUE(c.ext.OnNode(DgxNode("empty")).ok());
  ASSERT_TRUE(c.ext.OnNode(DgxNode("half")).ok());
  c.ext.OnPod(GpuPod("x", 4, 0, "half"));
  auto scores = c.ext.Prioritize(Args(GpuPod("p", 4), {"empty", "half", "unknown"}));
  ASSERT_EQ(scores.size(), 3u);
  for (const auto& s : scores) {
    EXPECT_GE(s.score, 0);
    EXPECT_LE(s.score, 10);
  }
  EXPECT_GT(scores[1].score, scores[0].score);  // best fit: fill the half-used node
  EXPECT_EQ(scores[2].score, 0);
}

TEST(BindTest, NonGangBindPatchesDevicesThenBindsAndChargesTheLedger) {
  TestCluster c;
  ASSERT_TRUE(c.ext.OnNode(DgxNode("n")).ok());
  PodInfo pod = GpuPod("p", 2);
  c.ext.Filter(Args(pod, {"n"}));  // embedded mode: the pod is learnt from the request
  BindProbe probe;
  c.ext.Bind(BindOf(pod, "n"), probe.Callback());
  EXPECT_EQ(probe.Wait(), "");
  const auto calls = c.writer.calls();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].verb, "devices");
  EXPECT_EQ(calls[1].verb, "bind");
  EXPECT_EQ(calls[1].value, "n");
  EXPECT_EQ(c.ext.StateJson()["cluster"]["freeGpus"], 6);
}

TEST(BindTest, FailedBindingForgetsTheAssumption) {
  TestCluster c;
  ASSERT_TRUE(c.ext.OnNode(DgxNode("n")).ok());
  PodInfo pod = GpuPod("p", 2);
  c.ext.OnPod(pod);
  c.writer.FailOn("bind", "default/p");
  BindProbe probe;
  c.ext.Bind(BindOf(pod, "n"), probe.Callback());
  EXPECT_NE(probe.Wait().find("injected failure"), std::string::npos);
  c.ext.DrainForTest();
  EXPECT_EQ(c.ext.StateJson()["cluster"]["freeGpus"], 8);
}

// Two low-tier victims gangs; the one with less work at risk is chosen, as a whole.
struct PreemptFixture : ::testing::Test {
  TestCluster c;
  void SetUp() override {
    for (const char* n : {"n0", "n1", "n2"}) ASSERT_TRUE(c.ext.OnNode(DgxNode(n)).ok());
    // Gang "costly" (TrainingJob with 1e6 GPU-seconds at risk) fills n0.
    for (int i = 0; i < 2; ++i) {
      PodInfo p = GangPod("costly", i, 4, 2, 100);
      p.gated = false;
      p.node_name = "n0";
      p.training_job = "costly-job";
      c.ext.OnPod(p);
    }
    c.ext.OnTrainingJob({"default", "costly-job", 1e6, 0, ""});
    // Gang "cheap" (10 GPU-seconds) has members on n1 and n2.
    for (int i = 0; i < 2; ++i) {
      PodInfo p = GangPod("cheap", i, 8, 2, 100);
      p.gated = false;
      p.node_name = i == 0 ? "n1" : "n2";
      p.training_job = "cheap-job";
      c.ext.OnPod(p);
    }
    c.ext.OnTrainingJob({"default", "cheap-job", 10, 0, ""});
    // As the daemon does every 100 ms: the engine adopts the running gangs (their expected
    // ends feed the price of preempting them).
    c.ext.Tick();
  }
  PreemptArgs Proposal(const PodInfo& preemptor) {
    PreemptArgs a;
    a.pod = preemptor;
    a.victims["n0"] = {"uid-costly-0", "uid-costly-1"};
    a.victims["n1"] = {"uid-cheap-0"};
    return a;
  }
};

TEST_F(PreemptFixture, EvictsTheWholeLowestTierGangWithLeastWorkAtRisk) {
  PodInfo preemptor = GpuPod("hi", 8, 10000);
  PreemptResult r = c.ext.Preempt(Proposal(preemptor));
  ASSERT_EQ(r.victims.size(), 1u);
  ASSERT_TRUE(r.victims.contains("n1"));
  EXPECT_EQ(r.victims["n1"], std::vector<std::string>{"uid-cheap-0"});
  c.ext.DrainForTest();
  auto evictions = c.writer.CallsOf("evict");
  ASSERT_EQ(evictions.size(), 1u);  // the gang's member on the other node goes too
  EXPECT_EQ(evictions[0].target, "default/cheap-1");
}

TEST_F(PreemptFixture, VetoesWhenAVictimIsNotOfALowerTier) {
  PodInfo preemptor = GpuPod("std", 8, 100);  // same tier (spot) as the victims
  PreemptResult r = c.ext.Preempt(Proposal(preemptor));
  EXPECT_TRUE(r.victims.empty());
  c.ext.DrainForTest();
  EXPECT_TRUE(c.writer.CallsOf("evict").empty());
}

TEST_F(PreemptFixture, VetoesPartialGangVictimsWhoseGangHasAProtectedMember) {
  // A high-tier member joins gang "cheap": the gang is no longer a lower-tier whole.
  PodInfo p = GangPod("cheap", 2, 1, 2, 10000);
  p.gated = false;
  p.node_name = "n0";
  c.ext.OnPod(p);
  PreemptArgs a;
  a.pod = GpuPod("hi", 8, 10000);
  a.victims["n1"] = {"uid-cheap-0"};
  EXPECT_TRUE(c.ext.Preempt(a).victims.empty());
}

TEST_F(PreemptFixture, VetoesWhenTheVictimsDoNotMakeRoom) {
  c.ext.OnTrainingJob({"default", "costly-job", 100, 0, ""});  // cheap enough to pay for itself
  PreemptArgs a;
  a.pod = GpuPod("hi", 8, 10000);
  a.victims["n0"] = {"uid-costly-0"};  // 4 of 8 GPUs freed: its gang mate frees the rest -> fits
  EXPECT_FALSE(c.ext.Preempt(a).victims.empty());
  // The only offered node is held by a pod of the preemptor's own tier: kube-scheduler's
  // victim there frees nothing we know of, and nothing of a lower tier holds its GPUs.
  ASSERT_TRUE(c.ext.OnNode(DgxNode("n3")).ok());
  c.ext.OnPod(GpuPod("peer", 8, 10000, "n3"));
  PreemptArgs b;
  b.pod = GpuPod("hi2", 8, 10000);
  b.victims["n3"] = {"uid-unknown"};
  EXPECT_TRUE(c.ext.Preempt(b).victims.empty());
}

TEST_F(PreemptFixture, TrainingJobNeedingNoticeGetsAPreemptRequestAndAVeto) {
  // 10,000 GPU-s at risk (x100, the preemptor's weight) cost more than the preemptor's 8
  // GPUs waiting 30 s for the checkpoint (x100): graceful.
  c.ext.OnTrainingJob({"default", "cheap-job", 1e4, 30, ""});
  PreemptResult r = c.ext.Preempt(Proposal(GpuPod("hi", 8, 10000)));
  EXPECT_TRUE(r.victims.empty());
  c.ext.DrainForTest();
  auto requests = c.writer.CallsOf("preempt-request");
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].target, "default/cheap-job");
  auto body = json::Parse(requests[0].value);
  ASSERT_TRUE(body.ok());
  EXPECT_EQ((*body)["preemptor"], "default/hi");
  EXPECT_TRUE(body->contains("deadline"));
  EXPECT_TRUE(body->contains("requestId"));
  EXPECT_TRUE(c.writer.CallsOf("evict").empty());
}

TEST_F(PreemptFixture, ATrainingJobWithLittleAtRiskIsEvictedAtOnceDespiteItsNotice) {
  // 10 GPU-s lost cost less than the preemptor waiting 30 s: the engine's cheaper choice.
  c.ext.OnTrainingJob({"default", "cheap-job", 10, 30, ""});
  PreemptResult r = c.ext.Preempt(Proposal(GpuPod("hi", 8, 10000)));
  EXPECT_TRUE(r.victims.contains("n1"));
  c.ext.DrainForTest();
  EXPECT_TRUE(c.writer.CallsOf("preempt-request").empty());
  EXPECT_EQ(c.writer.CallsOf("evict").size(), 1u);
}

TEST(ExplainTest, SaysWhyANonGangPodIsPending) {
  TestCluster c;
  ASSERT_TRUE(c.ext.OnNode(DgxNode("n")).ok());
  c.ext.OnPod(GpuPod("big", 8, 0, "n"));
  PodInfo pod = GpuPod("p", 4, 1000000);
  c.ext.OnPod(pod);
  c.ext.Filter(Args(pod, {"n"}));
  const std::string why = c.ext.Explain("default/p");
  EXPECT_NE(why.find("pending"), std::string::npos) << why;
  EXPECT_NE(why.find("0 of 1 candidate nodes fit"), std::string::npos) << why;
  EXPECT_NE(c.ext.Explain("default/nobody").find("not known"), std::string::npos);
}

}  // namespace
}  // namespace phalanx::extender::testing
