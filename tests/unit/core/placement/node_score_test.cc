#include "core/placement/node_score.h"

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/unit/core/placement/placement_builders.h"

namespace phalanx::placement {
namespace {

using ::testing::HasSubstr;
using namespace ::phalanx::placement::testing;

PodRequest Pod(int gpus, int priority = 0) {
  PodRequest r;
  r.gpus = gpus;
  r.priority = priority;
  return r;
}

TEST(NodeScoreTest, ComponentsFollowTheirFormulas) {
  struct Case {
    std::string name;
    GpuMask used;      // GPUs allocated before scoring
    bool pcie;         // PcieFour node instead of 8-GPU NVSwitch
    int gpus;          // request
    double topology;   // expected components
    double packing;
    double total;
    int rounded;
  };
  const std::vector<Case> cases = {
      // NVSwitch: every set is a best set -> topology 10. 4 used + 2 = 6 of 8 ->
      // packing 10*6/8 = 7.5. total = (10 + 7.5) / 2 = 8.75 -> 9.
      {"nvswitch_half_full", Mask({0, 1, 2, 3}), false, 2, 10, 7.5, 8.75, 9},
      // Empty NVSwitch node, 1 GPU: packing 10*1/8 = 1.25; total (10+1.25)/2 = 5.625 -> 6.
      {"nvswitch_empty", 0, false, 1, 10, 1.25, 5.625, 6},
      // PCIe box, all free, 2 GPUs: {0,1} over NVLink = best pair -> topology 10.
      // packing 10*2/4 = 5; total 7.5 -> 8 (lround rounds half away from zero).
      {"pcie_pair_intact", 0, true, 2, 10, 5, 7.5, 8},
      // PCIe box with 0 and 3 used: only {1,2} (SYS, 10 GB/s) vs best 100 ->
      // topology 10*10/100 = 1. packing 10*4/4 = 10. total 5.5 -> 6.
      {"pcie_pair_split", Mask({0, 3}), true, 2, 1, 10, 5.5, 6},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    ClusterState s(StandardLevels());
    NodeSpec spec = tc.pcie ? MakeNode("n").PcieFour().Build() : MakeNode("n").NvSwitch().Build();
    ASSERT_TRUE(s.AddNode(spec).ok());
    if (tc.used) {
      ASSERT_TRUE(s.Allocate(PodUid("x"), NodeName("n"), tc.used).ok());
    }
    Result<NodeScore> sc = ScoreNode(s, Idx(s, "n"), Pod(tc.gpus));
    ASSERT_TRUE(sc.ok()) << sc.status();
    EXPECT_DOUBLE_EQ(sc->topology, tc.topology);
    EXPECT_DOUBLE_EQ(sc->packing, tc.packing);
    EXPECT_DOUBLE_EQ(sc->total, tc.total);
    EXPECT_EQ(sc->Rounded(), tc.rounded);
    EXPECT_FALSE(sc->locality_applies);
  }
}

TEST(NodeScoreTest, LocalityRewardsTheLowestSharedLevel) {
  ClusterState s(StandardLevels());
  ASSERT_TRUE(s.AddNode(MakeNode("a").NvSwitch().Rack("r1").Zone("z1").Build()).ok());
  ASSERT_TRUE(s.AddNode(MakeNode("b").NvSwitch().Rack("r1").Zone("z1").Build()).ok());
  ASSERT_TRUE(s.AddNode(MakeNode("c").NvSwitch().Rack("r2").Zone("z1").Build()).ok());
  ASSERT_TRUE(s.AddNode(MakeNode("d").NvSwitch().Rack("r3").Zone("z2").Build()).ok());
  const std::vector<NodeIndex> members{Idx(s, "a")};
  GangContext gang{members};
  // 4 levels: same host (0) -> 10; same rack (2) -> 10*(4-2)/4 = 5; same zone (3) ->
  // 2.5; nothing shared -> 0.
  EXPECT_DOUBLE_EQ(ScoreNode(s, Idx(s, "a"), Pod(1), {}, gang)->locality, 10);
  EXPECT_DOUBLE_EQ(ScoreNode(s, Idx(s, "b"), Pod(1), {}, gang)->locality, 5);
  EXPECT_DOUBLE_EQ(ScoreNode(s, Idx(s, "c"), Pod(1), {}, gang)->locality, 2.5);
  EXPECT_DOUBLE_EQ(ScoreNode(s, Idx(s, "d"), Pod(1), {}, gang)->locality, 0);
  // Weights: only locality counts -> total == locality.
  ScoreWeights w{0, 0, 1};
  EXPECT_DOUBLE_EQ(ScoreNode(s, Idx(s, "b"), Pod(1), w, gang)->total, 5);
}

TEST(NodeScoreTest, UnknownTopologyIsLeftOutOfTheTotal) {
  ClusterState s(StandardLevels());
  ASSERT_TRUE(s.AddNode(MakeNode("u").Gpus(4).Build()).ok());
  Result<NodeScore> sc = ScoreNode(s, Idx(s, "u"), Pod(2));
  ASSERT_TRUE(sc.ok());
  EXPECT_FALSE(sc->topology_known);
  // packing only: 10*2/4 = 5.
  EXPECT_DOUBLE_EQ(sc->total, 5);
}

TEST(NodeScoreTest, FeasibilityReasonsSplitByWhetherPreemptionHelps) {
  ClusterState s(StandardLevels());
  ASSERT_TRUE(s.AddNode(MakeNode("small").Gpus(2).NvSwitch().Pool("H100").Build()).ok());
  ASSERT_TRUE(s.AddNode(MakeNode("sick").Gpus(4).NvSwitch().Pool("H100").Unhealthy({0, 1}).Build()).ok());
  ASSERT_TRUE(s.AddNode(MakeNode("a100").Gpus(8).NvSwitch().Pool("A100").Build()).ok());
  ASSERT_TRUE(s.AddNode(MakeNode("cordoned").NvSwitch().Pool("H100").Cordoned().Build()).ok());
  ASSERT_TRUE(s.AddNode(MakeNode("busy").NvSwitch().Pool("H100").Build()).ok());
  ASSERT_TRUE(s.AddNode(MakeNode("planned").NvSwitch().Pool("H100").Build()).ok());
  ASSERT_TRUE(s.AddNode(MakeNode("vip").NvSwitch().Pool("H100").Build()).ok());
  ASSERT_TRUE(s.Allocate(PodUid("spot"), NodeName("busy"), Mask({0, 1, 2, 3, 4, 5}), 100).ok());
  std::vector<MemberPlacement> plan{{NodeName("planned"), Mask({0, 1, 2, 3, 4, 5}), 0}};
  ASSERT_TRUE(s.Reserve(GangKey("ml/g"), plan).ok());
  ASSERT_TRUE(s.Allocate(PodUid("crit"), NodeName("vip"), Mask({0, 1, 2, 3, 4, 5}), 100000).ok());

  PodRequest req = Pod(4, 1000);
  req.pool = "H100";
  struct Case {
    std::string node;
    UnfitReason reason;
    bool resolvable;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"small", UnfitReason::kTooFewGpus, false, "Insufficient nvidia.com/gpu: requested 4, node has 2 GPUs in total"},
      {"sick", UnfitReason::kUnhealthyGpus, false, "Insufficient nvidia.com/gpu: requested 4, only 2 of 4 GPUs healthy"},
      {"a100", UnfitReason::kWrongPool, false, "node's GPU product is A100, not the one the pod needs"},
      {"cordoned", UnfitReason::kNodeUnschedulable, false, "node is unschedulable (cordoned)"},
      // 2 free + 6 held by priority 100 < 1000.
      {"busy", UnfitReason::kInUseByLowerTiers, true,
       "Insufficient nvidia.com/gpu: requested 4, free 2 (6 held by lower tiers)"},
      {"planned", UnfitReason::kReservedByPlans, false,
       "Insufficient nvidia.com/gpu: requested 4, free 2 (6 reserved by gang plans)"},
      {"vip", UnfitReason::kInUseByHigherTiers, false,
       "Insufficient nvidia.com/gpu: requested 4, free 2 (in use by equal or higher tiers)"},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.node);
    Feasibility f = CheckFeasibility(s, Idx(s, tc.node), req);
    EXPECT_EQ(f.reason, tc.reason);
    EXPECT_EQ(f.resolvable_by_preemption(), tc.resolvable);
    EXPECT_EQ(FormatFeasibility(f), tc.message);
    Result<NodeScore> sc = ScoreNode(s, Idx(s, tc.node), req);
    EXPECT_EQ(sc.status().code(), StatusCode::kFailedPrecondition);
  }
  // The plan's own pods may use its reservation.
  PodRequest member = req;
  member.own_plan = GangKey("ml/g");
  EXPECT_TRUE(CheckFeasibility(s, Idx(s, "planned"), member).fits());
}

// A full node with holders of three tiers: what preemption could free grows with the
// request's priority, and a shared GPU counts only once all of its shares are lower.
TEST(NodeScoreTest, PreemptibleGpusGrowWithTheRequestsTier) {
  ClusterState s(StandardLevels());
  ASSERT_TRUE(s.AddNode(MakeNode("full").NvSwitch().Pool("H100").Build()).ok());
  ASSERT_TRUE(s.Allocate(PodUid("low"), NodeName("full"), Mask({0, 1}), 0).ok());
  ASSERT_TRUE(s.Allocate(PodUid("mid"), NodeName("full"), Mask({2, 3, 4}), 5).ok());
  ASSERT_TRUE(s.Allocate(PodUid("high"), NodeName("full"), Mask({5, 6}), 10).ok());
  ASSERT_TRUE(s.AllocateShare(PodUid("share-low"), NodeName("full"), 7, 400, 0).ok());
  ASSERT_TRUE(s.AllocateShare(PodUid("share-mid"), NodeName("full"), 7, 400, 5).ok());
  const NodeIndex n = Idx(s, "full");
  struct Case {
    int priority;
    int preemptible;
    UnfitReason reason;
  };
  for (const Case& tc : std::vector<Case>{{0, 0, UnfitReason::kInUseByHigherTiers},
                                          {1, 2, UnfitReason::kInUseByHigherTiers},
                                          {5, 2, UnfitReason::kInUseByHigherTiers},
                                          {6, 6, UnfitReason::kInUseByLowerTiers},
                                          {11, 8, UnfitReason::kInUseByLowerTiers}}) {
    SCOPED_TRACE(tc.priority);
    const Feasibility f = CheckFeasibility(s, n, Pod(3, tc.priority));
    EXPECT_EQ(f.preemptible, tc.preemptible);
    EXPECT_EQ(f.reason, tc.reason);
  }
}

TEST(NodeScoreTest, SharesPickTheFullestGpuThatFits) {
  ClusterState s(StandardLevels());
  ASSERT_TRUE(s.AddNode(MakeNode("n").Gpus(4).NvSwitch().Build()).ok());
  ASSERT_TRUE(s.AllocateShare(PodUid("a"), NodeName("n"), 1, 700, 0).ok());
  ASSERT_TRUE(s.AllocateShare(PodUid("b"), NodeName("n"), 2, 400, 0).ok());
  PodRequest share;
  share.milli = 300;
  Result<NodeScore> sc = ScoreNode(s, Idx(s, "n"), share);
  ASSERT_TRUE(sc.ok()) << sc.status();
  // GPU 1 has exactly 300 left: best fit.
  EXPECT_EQ(sc->gpus, Mask({1}));
  // In use after: 700 + 400 + 300 = 1400 of 4000 milli -> 10 * 1400 / 4000 = 3.5.
  EXPECT_DOUBLE_EQ(sc->packing, 3.5);
  share.milli = 700;
  sc = ScoreNode(s, Idx(s, "n"), share);
  ASSERT_TRUE(sc.ok());
  EXPECT_EQ(sc->gpus, Mask({0}));  // GPU 2 has 600 left; 0 and 3 are whole, lowest first
  // A share of a GPU held by a lower tier is resolvable.
  ClusterState t(StandardLevels());
  ASSERT_TRUE(t.AddNode(MakeNode("m").Gpus(1).NvSwitch().Build()).ok());
  ASSERT_TRUE(t.AllocateShare(PodUid("low"), NodeName("m"), 0, 800, 10).ok());
  PodRequest big;
  big.milli = 500;
  big.priority = 100;
  Feasibility f = CheckFeasibility(t, Idx(t, "m"), big);
  EXPECT_EQ(f.reason, UnfitReason::kInUseByLowerTiers);
  EXPECT_EQ(f.free, 200);
}

TEST(NodeScoreTest, PickBestNodePrefersTheFullestFeasibleNode) {
  ClusterState s(StandardLevels());
  AddRack(s, "n", 3, "r1");
  ASSERT_TRUE(s.Allocate(PodUid("x"), NodeName("n1"), Mask({0, 1, 2, 3, 4})).ok());  // 3 free
  ASSERT_TRUE(s.Allocate(PodUid("y"), NodeName("n2"), Mask({0, 1, 2, 3, 4, 5, 6})).ok());  // 1 free
  std::optional<NodeChoice> c = PickBestNode(s, Pod(2));
  ASSERT_TRUE(c.has_value());
  // n2 cannot fit 2; n1 ends 7/8 full (packing 8.75) vs n0 2/8 (2.5).
  EXPECT_EQ(c->node, Idx(s, "n1"));
  EXPECT_EQ(GpuCount(c->score.gpus), 2);
  PodRequest wrong = Pod(1);
  wrong.pool = "B200";
  EXPECT_FALSE(PickBestNode(s, wrong).has_value());
  EXPECT_FALSE(PickBestNode(s, Pod(9)).has_value());
}

// The batch form must answer exactly what ScoreNode answers node by node, whatever the mix:
// shared and separate topologies, unhealthy GPUs, holders of several tiers, shares, a gang
// reservation seen from its own pod and from others, unknown indexes and repeated nodes.
TEST(NodeScoreTest, ScoreNodesEqualsScoreNodePerNode) {
  ClusterState s(StandardLevels());
  std::mt19937 rng(5);
  const auto shared_nvswitch = NvSwitchMatrix(8);
  std::vector<NodeIndex> all;
  for (int i = 0; i < 120; ++i) {
    NodeBuilder b = MakeNode(Numbered("n", i));
    switch (i % 5) {
      case 0: b.Topology(shared_nvswitch); break;  // one matrix for many nodes: the memo's case
      case 1: b.NvSwitch(); break;                 // a matrix of its own
      case 2: b.PcieFour(); break;
      case 3: b.Gpus(4); break;                    // no topology
      case 4: b.Topology(shared_nvswitch).Unhealthy({static_cast<int>(rng() % 8)}); break;
    }
    if (i % 17 == 0) b.Cordoned();
    auto idx = s.AddNode(b.Build());
    ASSERT_TRUE(idx.ok()) << idx.status();
    all.push_back(*idx);
  }
  for (int i = 0; i < 120; ++i) {
    const NodeName node(Numbered("n", i));
    const int gpus = s.node(all[static_cast<size_t>(i)]).spec.gpu_count;
    for (int g = 0; g < gpus; ++g) {
      const int roll = static_cast<int>(rng() % 6);
      const int priority = static_cast<int>(rng() % 3) * 100;
      const std::string uid = fmt::format("p-{}-{}", i, g);
      if (roll == 0) (void)s.Allocate(PodUid(uid), node, GpuMask{1} << g, priority);
      if (roll == 1) (void)s.AllocateShare(PodUid(uid), node, g, 100 + static_cast<int>(rng() % 800), priority);
    }
  }
  std::vector<MemberPlacement> plan;
  for (int i = 0; i < 120; i += 7) {
    const NodeIndex idx = all[static_cast<size_t>(i)];
    const GpuMask free = s.node(idx).free;
    if (free) plan.push_back({NodeName(Numbered("n", i)), free & (~free + 1), 0});  // lowest free GPU
  }
  ASSERT_TRUE(s.Reserve(GangKey("ml/g"), plan).ok());

  std::vector<NodeIndex> asked = all;
  asked.insert(asked.end(), all.begin(), all.begin() + 30);  // repeats
  asked.push_back(-1);
  std::shuffle(asked.begin(), asked.end(), rng);
  const ScoreWeights weights{.topology = 2, .packing = 1, .locality = 1};
  for (int trial = 0; trial < 60; ++trial) {
    PodRequest r = Pod(1 + static_cast<int>(rng() % 8), static_cast<int>(rng() % 3) * 100);
    if (trial % 4 == 1) r.milli = 100 + static_cast<int>(rng() % 900);  // a share
    if (trial % 4 == 2) r.own_plan = GangKey("ml/g");
    const auto batch = ScoreNodes(s, asked, r, weights);
    ASSERT_EQ(batch.size(), asked.size());
    int scored = 0;
    for (size_t k = 0; k < asked.size(); ++k) {
      SCOPED_TRACE(fmt::format("trial {} node {} gpus {} milli {}", trial, asked[k], r.gpus, r.milli));
      if (asked[k] < 0) {
        EXPECT_FALSE(batch[k].has_value());
        continue;
      }
      const Result<NodeScore> one = ScoreNode(s, asked[k], r, weights);
      ASSERT_EQ(batch[k].has_value(), one.ok());
      if (!one.ok()) continue;
      ++scored;
      EXPECT_EQ(batch[k]->total, one->total);
      EXPECT_EQ(batch[k]->topology, one->topology);
      EXPECT_EQ(batch[k]->packing, one->packing);
      EXPECT_EQ(batch[k]->topology_known, one->topology_known);
      EXPECT_EQ(batch[k]->gpus, one->gpus);
      EXPECT_EQ(batch[k]->ring_bandwidth_gbps, one->ring_bandwidth_gbps);
    }
    if (r.gpus <= 2) {
      EXPECT_GT(scored, 0);  // the comparison compared something
    }
  }
  PodRequest invalid = Pod(0);
  for (const auto& score : ScoreNodes(s, asked, invalid)) EXPECT_FALSE(score.has_value());
}

TEST(NodeScoreTest, RejectsInvalidRequests) {
  ClusterState s(StandardLevels());
  ASSERT_TRUE(s.AddNode(MakeNode("n").NvSwitch().Build()).ok());
  PodRequest r = Pod(0);
  EXPECT_EQ(ScoreNode(s, Idx(s, "n"), r).status().code(), StatusCode::kInvalidArgument);
  r = Pod(1);
  r.milli = 0;
  EXPECT_THAT(ScoreNode(s, Idx(s, "n"), r).status().message(), HasSubstr("invalid"));
}

}  // namespace
}  // namespace phalanx::placement
