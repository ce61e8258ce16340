// The whole-GPU filter's kept no-fit answers (extender/verbs/no_fit_cache.h): reused for the same
// ledger state, request and candidate set in any order, and never once anything they were
// derived from changed. Each reply is compared with a fresh judgement of the same request.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tests/unit/extender/test_cluster.h"

namespace phalanx::extender::testing {
namespace {

constexpr int kNodes = 40;

// Every node runs a 1-GPU pod at priority 0: an 8-GPU pod fits nowhere.
struct FullCluster : TestCluster {
  FullCluster() {
    for (int i = 0; i < kNodes; ++i) {
      names.push_back(fmt::format("node-{:02d}", i));
      EXPECT_TRUE(ext.OnNode(DgxNode(names.back())).ok());
      ext.OnPod(GpuPod(fmt::format("busy-{}", i), 1, 0, names.back()));
    }
  }
  // As the HTTP verb asks (reply_only).
  FilterResult Ask(const PodInfo& pod, const std::vector<std::string>& candidates) {
    FilterArgs args = Args(pod, candidates);
    args.reply_only = true;
    return ext.Filter(args);
  }
  // The reply a fresh judgement gives (no kept answer is consulted without reply_only).
  std::string Fresh(const PodInfo& pod, const std::vector<std::string>& candidates) {
    FilterResult r = ext.Filter(Args(pod, candidates));
    EXPECT_FALSE(r.encoded);
    return EncodeFilterResult(r);
  }
  std::vector<std::string> names;
};

// The reply as kube-scheduler reads it: key order does not matter (Go maps), name order in
// NodeNames does not either (it filters a list of its own nodes).
nlohmann::json Decoded(const std::string& reply) {
  nlohmann::json j = nlohmann::json::parse(reply);
  auto names = j["NodeNames"].get<std::vector<std::string>>();
  std::sort(names.begin(), names.end());
  j["NodeNames"] = names;
  return j;
}

PodInfo Wants8(const std::string& name, int priority = 0) { return GpuPod(name, 8, priority); }

TEST(NoFitCacheTest, SameStateRequestAndSetInAnotherOrderGetTheKeptAnswer) {
  FullCluster c;
  const FilterResult first = c.Ask(Wants8("a"), c.names);
  ASSERT_TRUE(first.encoded);
  std::vector<std::string> reversed(c.names.rbegin(), c.names.rend());
  const FilterResult again = c.Ask(Wants8("b"), reversed);  // another pod of the same shape
  ASSERT_TRUE(again.encoded);
  EXPECT_EQ(again.encoded.get(), first.encoded.get()) << "not reused";
  EXPECT_TRUE(again.unresolvable.empty()) << "a reused answer skips the judging";
  EXPECT_EQ(Decoded(EncodeFilterResult(again)), Decoded(c.Fresh(Wants8("b"), reversed)));
  const nlohmann::json j = Decoded(*again.encoded);
  EXPECT_EQ(j["FailedAndUnresolvableNodes"].size(), static_cast<size_t>(kNodes));
  EXPECT_EQ(j["FailedAndUnresolvableNodes"]["node-07"], "Insufficient nvidia.com/gpu");
  // The explanation is recorded for the pod the kept answer served.
  EXPECT_NE(c.ext.Explain("default/b").find("0 of 40 candidate nodes fit"), std::string::npos)
      << c.ext.Explain("default/b");
}

TEST(NoFitCacheTest, NeverServesAnAnswerOnceAnyInputChanged) {
  FullCluster c;
  ASSERT_TRUE(c.Ask(Wants8("a"), c.names).encoded);
  auto expect_fresh = [&](const PodInfo& pod, const std::vector<std::string>& candidates, const char* what) {
    const FilterResult r = c.Ask(pod, candidates);
    EXPECT_EQ(Decoded(EncodeFilterResult(r)), Decoded(c.Fresh(pod, candidates))) << what;
  };

  // A node became fit: its pod finished.
  c.ext.OnPodDeleted(PodUid("uid-busy-3"));
  expect_fresh(Wants8("a"), c.names, "a node freed");
  {
    const nlohmann::json j = Decoded(EncodeFilterResult(c.Ask(Wants8("a"), c.names)));
    EXPECT_EQ(j["NodeNames"], nlohmann::json::array({"node-03"}));
  }
  c.ext.OnPod(GpuPod("busy-3b", 1, 0, "node-03"));
  ASSERT_TRUE(c.Ask(Wants8("a"), c.names).encoded);  // full again: kept anew

  // The reason changed: a node cordoned.
  NodeInfo cordoned = DgxNode("node-05");
  cordoned.unschedulable = true;
  ASSERT_TRUE(c.ext.OnNode(cordoned).ok());
  expect_fresh(Wants8("a"), c.names, "a node cordoned");
  EXPECT_EQ(Decoded(*c.Ask(Wants8("a"), c.names).encoded)["FailedAndUnresolvableNodes"]["node-05"],
            "node is unschedulable (cordoned)");

  // Another demand on the same state: a higher tier may preempt the busy pods (FailedNodes).
  expect_fresh(Wants8("high", 1000), c.names, "a higher priority");
  EXPECT_EQ(Decoded(*c.Ask(Wants8("high", 1000), c.names).encoded)["FailedNodes"].size(),
            static_cast<size_t>(kNodes - 1));
  expect_fresh(GpuPod("seven", 7), c.names, "another GPU count");

  // Another candidate set: fewer names, a name twice, a name the ledger does not know.
  std::vector<std::string> fewer(c.names.begin(), c.names.begin() + 10);
  expect_fresh(Wants8("a"), fewer, "a subset");
  EXPECT_EQ(Decoded(*c.Ask(Wants8("a"), fewer).encoded)["FailedAndUnresolvableNodes"].size(), 10u);
  std::vector<std::string> twice = c.names;
  twice.back() = twice.front();  // as many names as the kept set, one of them missing
  expect_fresh(Wants8("a"), twice, "a name twice");
  EXPECT_FALSE(c.Ask(Wants8("a"), twice).encoded) << "a set with a name twice is not kept";
  std::vector<std::string> unknown = c.names;
  unknown.back() = "not-a-node";
  expect_fresh(Wants8("a"), unknown, "an unknown name");
  EXPECT_FALSE(c.Ask(Wants8("a"), unknown).encoded) << "a set with an unknown name is not kept";
}

// Only the HTTP verb (reply_only) uses kept answers; a fit, a gang member or a pod without
// GPUs never makes one.
TEST(NoFitCacheTest, OnlyWholeGpuNoFitAnswersAreKept) {
  FullCluster c;
  EXPECT_FALSE(c.Ask(GpuPod("four", 4), c.names).encoded);  // fits everywhere
  EXPECT_FALSE(c.Ask(GpuPod("cpu", 0), c.names).encoded);
  FilterResult plain = c.ext.Filter(Args(Wants8("a"), c.names));
  EXPECT_FALSE(plain.encoded);
  EXPECT_EQ(plain.unresolvable.size(), static_cast<size_t>(kNodes));
}

}  // namespace
}  // namespace phalanx::extender::testing
