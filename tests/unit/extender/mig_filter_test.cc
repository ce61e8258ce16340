// MIG in the extender: nvidia.com/mig-<profile> requests parsed from the Pod, filter
// reasons split by whether preemption can help, best-fit prioritize, bind writing MIG
// UUIDs and charging the ledger.
#include <gtest/gtest.h>

#include "core/json/json.h"
#include "core/topology/reference_machines.h"
#include "extender/mig/mig_filter.h"
#include "extender/mig/mig_requests.h"
#include "tests/unit/extender/test_cluster.h"

namespace phalanx::extender::testing {
namespace {

PodInfo MigPod(const std::string& name, const std::string& profile, int count, int priority = 0,
               const std::string& node = "") {
  PodInfo p = GpuPod(name, 0, priority, node);
  p.mig[profile] = count;
  p.mig_container = "infer";
  return p;
}

TEST(MigRequestsTest, ParsedFromContainersWithPaths) {
  auto doc = json::Parse(R"({"metadata":{"name":"p","namespace":"ns","uid":"u1"},
    "spec":{"containers":[{"name":"side"},
      {"name":"infer","resources":{"limits":{"nvidia.com/mig-1g.10gb":"2","cpu":"1"}}}]}})");
  ASSERT_TRUE(doc.ok());
  auto pod = ParsePod(*doc);
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  EXPECT_EQ(pod->gpus, 0);
  ASSERT_EQ(pod->mig.size(), 1u);
  EXPECT_EQ(pod->mig.at("1g.10gb"), 2);
  EXPECT_EQ(pod->mig_container, "infer");

  auto bad = json::Parse(R"({"metadata":{"name":"p","namespace":"ns","uid":"u1"},
    "spec":{"containers":[{"name":"c","resources":{"requests":{"nvidia.com/mig-3g.40gb":"half"}}}]}})");
  ASSERT_TRUE(bad.ok());
  auto err = ParsePod(*bad);
  ASSERT_FALSE(err.ok());
  EXPECT_NE(err.status().message().find("Pod.spec.containers[0].resources.requests[nvidia.com/mig-3g.40gb]"),
            std::string::npos)
      << err.status().message();

  auto several = SingleMigRequest({{"1g.10gb", 1}, {"3g.40gb", 1}});
  EXPECT_EQ(several.status().message(),
            "pod requests several MIG profiles (nvidia.com/mig-1g.10gb, nvidia.com/mig-3g.40gb); phalanx schedules "
            "one per pod");
}

TEST(MigFilterTest, SplitsNodesByGeometryUseAndPriority) {
  TestCluster c;
  ASSERT_TRUE(c.ext.OnNode(A100MigNode("mig")).ok());
  ASSERT_TRUE(c.ext.OnNode(A100MigNode("held-high")).ok());
  ASSERT_TRUE(c.ext.OnNode(A100MigNode("held-low")).ok());
  ASSERT_TRUE(c.ext.OnNode(DgxNode("dgx")).ok());
  c.ext.OnPod(MigPod("high", "3g.40gb", 1, 1000, "held-high"));
  c.ext.OnPod(MigPod("low", "3g.40gb", 1, 10, "held-low"));
  const PodInfo pod = MigPod("p", "3g.40gb", 1, 100);
  FilterResult r = c.ext.Filter(Args(pod, {"mig", "held-high", "held-low", "dgx", "unknown"}));
  ASSERT_EQ(r.passed.size(), 1u);
  EXPECT_EQ(r.passed[0], "mig");
  ASSERT_EQ(r.failed.size(), 1u);
  EXPECT_EQ(r.failed[0].first, "held-low");
  EXPECT_EQ(r.failed[0].second,
            "Insufficient nvidia.com/mig-3g.40gb: requested 1, 0 free of 1 (the rest held by pods)");
  std::map<std::string_view, std::string> unresolvable(r.unresolvable.begin(), r.unresolvable.end());
  ASSERT_EQ(unresolvable.size(), 3u);
  EXPECT_EQ(unresolvable["dgx"], "Insufficient nvidia.com/mig-3g.40gb: node has no MIG devices");
  EXPECT_EQ(unresolvable["held-high"],
            "Insufficient nvidia.com/mig-3g.40gb: requested 1, 0 free of 1 (the rest held by pods) by pods of equal "
            "or higher priority");
  EXPECT_TRUE(unresolvable.contains("unknown"));

  // A profile the layout never has: every MIG node is unresolvable (MIG geometry).
  FilterResult g = c.ext.Filter(Args(MigPod("q", "4g.40gb", 1), {"mig", "held-low"}));
  EXPECT_TRUE(g.passed.empty());
  EXPECT_TRUE(g.failed.empty());
  ASSERT_EQ(g.unresolvable.size(), 2u);
  EXPECT_EQ(g.unresolvable[0].second, "Insufficient nvidia.com/mig-4g.40gb: node's MIG layout has no 4g.40gb device");
  // More devices than the layout has at all.
  FilterResult many = c.ext.Filter(Args(MigPod("r", "1g.10gb", 10), {"mig"}));
  ASSERT_EQ(many.unresolvable.size(), 1u);
  EXPECT_EQ(many.unresolvable[0].second, "Insufficient nvidia.com/mig-1g.10gb: requested 10, node's MIG layout has only 9");
}

// Messages are formatted once per distinct reason and shared: nodes that fail alike get the
// same text, nodes that differ in any number (or in the node's product) get their own.
TEST(MigFilterTest, SharedMessagesKeepEachNodesNumbers) {
  TestCluster c;
  for (const char* n : {"one-a", "one-b", "two", "other-pool"}) {
    NodeInfo node = A100MigNode(n);
    if (std::string_view(n) == "other-pool") node.labels[std::string(kProductLabel)] = "A30";
    ASSERT_TRUE(c.ext.OnNode(node).ok());
  }
  c.ext.OnPod(MigPod("a", "1g.10gb", 1, 0, "one-a"));
  c.ext.OnPod(MigPod("b", "1g.10gb", 1, 0, "one-b"));
  c.ext.OnPod(MigPod("c", "1g.10gb", 2, 0, "two"));
  FilterResult r = c.ext.Filter(Args(MigPod("p", "1g.10gb", 9), {"one-a", "two", "one-b"}));
  std::map<std::string_view, std::string> why(r.unresolvable.begin(), r.unresolvable.end());
  ASSERT_EQ(why.size(), 3u);
  const std::string eight = "Insufficient nvidia.com/mig-1g.10gb: requested 9, 8 free of 9 (the rest held by pods) by pods "
                            "of equal or higher priority";
  EXPECT_EQ(why["one-a"], eight);
  EXPECT_EQ(why["one-b"], eight);
  EXPECT_EQ(why["two"],
            "Insufficient nvidia.com/mig-1g.10gb: requested 9, 7 free of 9 (the rest held by pods) by pods of equal or "
            "higher priority");
  PodInfo picky = MigPod("q", "1g.10gb", 1);
  picky.pool_selector = "H100";
  FilterResult p = c.ext.Filter(Args(picky, {"one-a", "other-pool"}));
  std::map<std::string_view, std::string> pool(p.unresolvable.begin(), p.unresolvable.end());
  EXPECT_EQ(pool["one-a"], "node's GPU product is \"A100\", pod selects \"H100\"");
  EXPECT_EQ(pool["other-pool"], "node's GPU product is \"A30\", pod selects \"H100\"");
}

TEST(MigFilterTest, MigGpusAreNotWholeGpus) {
  TestCluster c;
  ASSERT_TRUE(c.ext.OnNode(A100MigNode("mig")).ok());
  EXPECT_EQ(c.ext.StateJson()["cluster"]["freeGpus"], 6);
  FilterResult r = c.ext.Filter(Args(GpuPod("whole", 7), {"mig"}));
  EXPECT_TRUE(r.passed.empty());
  ASSERT_EQ(r.unresolvable.size(), 1u);
}

TEST(MigPrioritizeTest, BestFitPrefersTheNodeWhoseMigDevicesAreInUse) {
  TestCluster c;
  ASSERT_TRUE(c.ext.OnNode(A100MigNode("idle")).ok());
  ASSERT_TRUE(c.ext.OnNode(A100MigNode("busy")).ok());
  ASSERT_TRUE(c.ext.OnNode(DgxNode("dgx")).ok());
  c.ext.OnPod(MigPod("running", "1g.10gb", 4, 0, "busy"));
  auto scores = c.ext.Prioritize(Args(MigPod("p", "1g.10gb", 1), {"idle", "busy", "dgx"}));
  ASSERT_EQ(scores.size(), 3u);
  EXPECT_GT(scores[1].score, scores[0].score);
  EXPECT_EQ(scores[2].score, 0);
  for (const auto& s : scores) EXPECT_TRUE(s.score >= 0 && s.score <= 10);
}

TEST(MigBindTest, BindWritesMigUuidsChargesTheLedgerAndTheNextPodSeesIt) {
  TestCluster c;
  ASSERT_TRUE(c.ext.OnNode(A100MigNode("n")).ok());
  const PodInfo pod = MigPod("p", "3g.40gb", 1);
  ASSERT_EQ(c.ext.Filter(Args(pod, {"n"})).passed.size(), 1u);  // embedded mode: learnt here
  BindProbe probe;
  c.ext.Bind(BindOf(pod, "n"), probe.Callback());
  EXPECT_EQ(probe.Wait(), "");
  const auto calls = c.writer.calls();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].verb, "devices");
  EXPECT_EQ(calls[0].value, R"({"infer":["MIG-n-1-0"]})");
  EXPECT_EQ(calls[1].verb, "bind");
  c.ext.DrainForTest();
  // GET /debug/state lists the node's MIG devices and their holders.
  const auto state = c.ext.StateJson();
  const auto& mig = state["nodes"][0]["mig"];
  ASSERT_EQ(mig.size(), 11u);
  EXPECT_EQ(mig[7]["profile"], "3g.40gb");
  EXPECT_EQ(mig[7]["pod"], "uid-p");
  // The only 3g.40gb device of the node is now held.
  FilterResult next = c.ext.Filter(Args(MigPod("q", "3g.40gb", 1), {"n"}));
  EXPECT_TRUE(next.passed.empty());
  ASSERT_EQ(next.unresolvable.size(), 1u);  // held by a pod of equal priority
  // 1g devices pack onto GPU 1 (already partly used) before the idle GPU 0.
  const PodInfo small = MigPod("s", "1g.10gb", 1);
  c.ext.Filter(Args(small, {"n"}));
  BindProbe second;
  c.ext.Bind(BindOf(small, "n"), second.Callback());
  EXPECT_EQ(second.Wait(), "");
  EXPECT_EQ(c.writer.CallsOf("devices").back().value, R"({"infer":["MIG-n-1-2"]})");
}

TEST(MigBindTest, BoundPodsFromAnnotationsHoldTheirDevicesAfterARestart) {
  TestCluster c;
  ASSERT_TRUE(c.ext.OnNode(A100MigNode("n")).ok());
  PodInfo bound = MigPod("b", "2g.20gb", 1, 0, "n");
  bound.devices = DeviceAssignment{{"infer", {"MIG-n-1-1"}}};
  c.ext.OnPod(bound);
  FilterResult r = c.ext.Filter(Args(MigPod("q", "2g.20gb", 1), {"n"}));
  EXPECT_TRUE(r.passed.empty());
}

}  // namespace
}  // namespace phalanx::extender::testing
