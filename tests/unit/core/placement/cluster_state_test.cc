#include "core/placement/cluster_state.h"

#include <climits>
#include <random>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/unit/core/placement/placement_builders.h"

namespace phalanx::placement {
namespace {

using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;
using namespace ::phalanx::placement::testing;

ClusterState TwoNodes() {
  ClusterState s(StandardLevels());
  EXPECT_TRUE(s.AddNode(MakeNode("n1").NvSwitch().Rack("r1").Pool("H100").Build()).ok());
  EXPECT_TRUE(s.AddNode(MakeNode("n2").NvSwitch().Rack("r1").Pool("H100").Build()).ok());
  return s;
}

TEST(ClusterStateTest, AddNodeIndexesPoolDomainAndFreeCounts) {
  ClusterState s = TwoNodes();
  EXPECT_EQ(s.FreeGpus(), 16);
  EXPECT_EQ(s.TotalGpus(), 16);
  const PoolId pool = s.FindPool("H100");
  ASSERT_NE(pool, kNoPool);
  EXPECT_EQ(s.pool(pool).free_gpus, 16);
  EXPECT_EQ(s.pool(pool).buckets[8].size(), 2u);
  const DomainId rack = s.FindDomain(2, "r1");
  ASSERT_NE(rack, kNoDomain);
  const DomainPoolSlice* slice = s.domain(2, rack).Slice(pool);
  ASSERT_NE(slice, nullptr);
  EXPECT_EQ(slice->nodes, 2);
  EXPECT_EQ(slice->free_hist[8], 2);
  // No nvlink-domain label: the node belongs to no domain at that level.
  EXPECT_EQ(s.DomainCount(1), 0);
  EXPECT_TRUE(s.CheckInvariantsForTest().ok());
}

// Tiers as (priority, GPUs) pairs, for readable expectations.
std::vector<std::pair<int, GpuMask>> Tiers(const NodeState& n) {
  std::vector<std::pair<int, GpuMask>> out;
  for (const HolderTier& t : n.tiers) out.emplace_back(t.priority, t.gpus);
  return out;
}

TEST(ClusterStateTest, HolderTiersFollowEveryChangeOfHoldings) {
  ClusterState s = TwoNodes();
  const NodeIndex n1 = Idx(s, "n1");
  EXPECT_TRUE(s.node(n1).tiers.empty());
  EXPECT_EQ(s.node(n1).lowest_priority, INT_MAX);
  ASSERT_TRUE(s.Allocate(PodUid("p1"), NodeName("n1"), Mask({0, 1}), 100).ok());
  ASSERT_TRUE(s.AllocateShare(PodUid("s1"), NodeName("n1"), 2, 300, -5).ok());
  ASSERT_TRUE(s.AllocateShare(PodUid("s2"), NodeName("n1"), 2, 300, 50).ok());
  ASSERT_TRUE(s.Reserve(GangKey("ns/g"), std::vector<MemberPlacement>{{NodeName("n1"), Mask({3}), 0}}).ok());
  ASSERT_TRUE(s.Commit(GangKey("ns/g"), 0, PodUid("m0"), 50).ok());
  // A shared GPU is in the tier of its highest share; the lowest holder is the -5 share.
  EXPECT_THAT(Tiers(s.node(n1)), ::testing::ElementsAre(std::pair<int, GpuMask>{50, Mask({2, 3})},
                                                         std::pair<int, GpuMask>{100, Mask({0, 1})}));
  EXPECT_EQ(s.node(n1).lowest_priority, -5);
  ASSERT_TRUE(s.Release(PodUid("s2")).ok());
  EXPECT_THAT(Tiers(s.node(n1)), ::testing::ElementsAre(std::pair<int, GpuMask>{-5, Mask({2})},
                                                         std::pair<int, GpuMask>{50, Mask({3})},
                                                         std::pair<int, GpuMask>{100, Mask({0, 1})}));
  EXPECT_TRUE(s.CheckInvariantsForTest().ok());
  // A copy keeps its own tiers (pods are rebound, tiers carried by value).
  ClusterState copy = s;
  ASSERT_TRUE(copy.Release(PodUid("p1")).ok());
  EXPECT_EQ(Tiers(copy.node(n1)).size(), 2u);
  EXPECT_EQ(Tiers(s.node(n1)).size(), 3u);
  EXPECT_TRUE(copy.CheckInvariantsForTest().ok());
  ASSERT_TRUE(s.RemoveNode(NodeName("n1")).ok());
  ASSERT_TRUE(s.AddNode(MakeNode("n1").NvSwitch().Rack("r1").Pool("H100").Build()).ok());
  EXPECT_TRUE(s.node(Idx(s, "n1")).tiers.empty());
  EXPECT_EQ(s.node(Idx(s, "n1")).lowest_priority, INT_MAX);
  EXPECT_TRUE(s.CheckInvariantsForTest().ok());
}

TEST(ClusterStateTest, FindNodeByViewMatchesFindNodeByName) {
  ClusterState s = TwoNodes();
  const std::string long_name = "gke-training-pool-a100-80gb-7f9c2d1e-xk2p";  // past the short-string buffer
  ASSERT_TRUE(s.AddNode(MakeNode(long_name).Gpus(4).Build()).ok());
  for (const std::string& name : {std::string("n1"), std::string("n2"), long_name}) {
    ASSERT_TRUE(s.FindNode(std::string_view(name)).has_value()) << name;
    EXPECT_EQ(s.FindNode(std::string_view(name)), s.FindNode(NodeName(name)));
    EXPECT_EQ(s.node(*s.FindNode(std::string_view(name))).spec.name.str(), name);
  }
  EXPECT_FALSE(s.FindNode(std::string_view("n3")).has_value());
  EXPECT_FALSE(s.FindNode(std::string_view(long_name).substr(0, 20)).has_value());
  ASSERT_TRUE(s.RemoveNode(NodeName("n1")).ok());
  EXPECT_FALSE(s.FindNode(std::string_view("n1")).has_value());
}

TEST(ClusterStateTest, RejectsDuplicateAndMalformedNodes) {
  ClusterState s = TwoNodes();
  EXPECT_EQ(s.AddNode(MakeNode("n1").Build()).status().code(), StatusCode::kAlreadyExists);
  NodeSpec bad = MakeNode("n3").Gpus(4).Build();
  bad.healthy = Mask({5});
  Result<NodeIndex> r = s.AddNode(bad);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("healthy mask"));
  NodeSpec wrong_matrix = MakeNode("n4").Gpus(4).Build();
  wrong_matrix.bandwidth = NvSwitchMatrix(8);
  EXPECT_EQ(s.AddNode(wrong_matrix).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.AddNode(MakeNode("n5").Gpus(65).Build()).status().code(), StatusCode::kInvalidArgument);
}

TEST(ClusterStateTest, AllocateAndReleaseMoveGpusBetweenBuckets) {
  ClusterState s = TwoNodes();
  ASSERT_TRUE(s.Allocate(PodUid("p1"), NodeName("n1"), Mask({0, 1, 2}), 100).ok());
  const NodeIndex n1 = Idx(s, "n1");
  EXPECT_EQ(s.node(n1).free, Mask({3, 4, 5, 6, 7}));
  EXPECT_EQ(s.FreeGpus(), 13);
  const PoolInfo& pool = s.pool(s.FindPool("H100"));
  EXPECT_EQ(pool.buckets[5].size(), 1u);
  EXPECT_EQ(pool.buckets[8].size(), 1u);
  ASSERT_NE(s.FindPod(PodUid("p1")), nullptr);
  EXPECT_EQ(s.FindPod(PodUid("p1"))->priority, 100);
  EXPECT_TRUE(s.CheckInvariantsForTest().ok());

  ASSERT_TRUE(s.Release(PodUid("p1")).ok());
  EXPECT_EQ(s.FreeGpus(), 16);
  EXPECT_EQ(s.Release(PodUid("p1")).code(), StatusCode::kNotFound);
  EXPECT_TRUE(s.CheckInvariantsForTest().ok());
}

TEST(ClusterStateTest, AllocateRefusesHeldGpusAndDoubleAllocation) {
  ClusterState s = TwoNodes();
  ASSERT_TRUE(s.Allocate(PodUid("p1"), NodeName("n1"), Mask({0, 1})).ok());
  Status taken = s.Allocate(PodUid("p2"), NodeName("n1"), Mask({1, 2}));
  EXPECT_EQ(taken.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(taken.message(), HasSubstr("GPUs 1 on node n1 are already held"));
  EXPECT_EQ(s.Allocate(PodUid("p1"), NodeName("n2"), Mask({0})).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(s.Allocate(PodUid("p3"), NodeName("nx"), Mask({0})).code(), StatusCode::kNotFound);
  EXPECT_EQ(s.Allocate(PodUid("p3"), NodeName("n2"), 0).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.Allocate(PodUid("p3"), NodeName("n2"), Mask({8})).code(), StatusCode::kInvalidArgument);
}

TEST(ClusterStateTest, SharesSumPerGpuAndBlockWholeUse) {
  ClusterState s = TwoNodes();
  const NodeIndex n1 = Idx(s, "n1");
  ASSERT_TRUE(s.AllocateShare(PodUid("a"), NodeName("n1"), 3, 300).ok());
  ASSERT_TRUE(s.AllocateShare(PodUid("b"), NodeName("n1"), 3, 500).ok());
  EXPECT_EQ(s.FreeMilli(n1, 3), 200);
  EXPECT_EQ(s.FreeMilli(n1, 2), 1000);
  // 300 + 500 + 300 > 1000.
  EXPECT_EQ(s.AllocateShare(PodUid("c"), NodeName("n1"), 3, 300).code(), StatusCode::kFailedPrecondition);
  // A shared GPU is not free for whole-GPU work.
  EXPECT_EQ(s.node(n1).free & Mask({3}), 0u);
  EXPECT_EQ(s.Allocate(PodUid("w"), NodeName("n1"), Mask({3})).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.AllocateShare(PodUid("d"), NodeName("n1"), 3, 1000).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(s.Release(PodUid("a")).ok());
  EXPECT_EQ(s.FreeMilli(n1, 3), 500);
  ASSERT_TRUE(s.Release(PodUid("b")).ok());
  EXPECT_EQ(s.node(n1).free & Mask({3}), Mask({3}));
  EXPECT_TRUE(s.CheckInvariantsForTest().ok());
}

TEST(ClusterStateTest, ReserveIsAllOrNothing) {
  ClusterState s = TwoNodes();
  ASSERT_TRUE(s.Allocate(PodUid("p"), NodeName("n2"), Mask({7})).ok());
  std::vector<MemberPlacement> members{{NodeName("n1"), AllGpus(8), 0}, {NodeName("n2"), AllGpus(8), 0}};
  Status st = s.Reserve(GangKey("ml/a"), members);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(st.message(), HasSubstr("member 1"));
  // Nothing of member 0 was reserved.
  EXPECT_EQ(s.node(Idx(s, "n1")).reserved, 0u);
  EXPECT_EQ(s.FindReservation(GangKey("ml/a")), nullptr);

  std::vector<MemberPlacement> overlapping{{NodeName("n1"), Mask({0, 1}), 0}, {NodeName("n1"), Mask({1, 2}), 0}};
  EXPECT_EQ(s.Reserve(GangKey("ml/b"), overlapping).code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(s.CheckInvariantsForTest().ok());
}

TEST(ClusterStateTest, CommitTurnsReservationIntoAllocations) {
  ClusterState s = TwoNodes();
  std::vector<MemberPlacement> members{{NodeName("n1"), Mask({0, 1, 2, 3}), 0}, {NodeName("n1"), Mask({4, 5, 6, 7}), 0}};
  ASSERT_TRUE(s.Reserve(GangKey("ml/a"), members).ok());
  EXPECT_EQ(s.FreeGpus(), 8);
  EXPECT_EQ(s.Reserve(GangKey("ml/a"), members).code(), StatusCode::kAlreadyExists);
  ASSERT_NE(s.ReservedBy(Idx(s, "n1"), 5), nullptr);
  EXPECT_EQ(*s.ReservedBy(Idx(s, "n1"), 5), GangKey("ml/a"));

  ASSERT_TRUE(s.Commit(GangKey("ml/a"), 0, PodUid("a-0"), 1000).ok());
  EXPECT_EQ(s.Commit(GangKey("ml/a"), 0, PodUid("a-x")).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.Commit(GangKey("ml/a"), 2, PodUid("a-x")).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(s.node(Idx(s, "n1")).allocated, Mask({0, 1, 2, 3}));
  EXPECT_EQ(s.node(Idx(s, "n1")).reserved, Mask({4, 5, 6, 7}));
  ASSERT_TRUE(s.Commit(GangKey("ml/a"), 1, PodUid("a-1")).ok());
  // Every member committed: the reservation is gone, the pods hold the GPUs.
  EXPECT_EQ(s.FindReservation(GangKey("ml/a")), nullptr);
  EXPECT_EQ(s.FindPod(PodUid("a-1"))->gpus, Mask({4, 5, 6, 7}));
  EXPECT_EQ(s.FreeGpus(), 8);
  EXPECT_TRUE(s.CheckInvariantsForTest().ok());
}

TEST(ClusterStateTest, UnreserveReleasesOnlyUncommittedMembers) {
  ClusterState s = TwoNodes();
  std::vector<MemberPlacement> members{{NodeName("n1"), AllGpus(8), 0}, {NodeName("n2"), AllGpus(8), 0}};
  ASSERT_TRUE(s.Reserve(GangKey("ml/a"), members).ok());
  ASSERT_TRUE(s.Commit(GangKey("ml/a"), 0, PodUid("a-0")).ok());
  ASSERT_TRUE(s.Unreserve(GangKey("ml/a")).ok());
  EXPECT_EQ(s.FreeGpus(), 8);  // n2 free again, n1 still held by a-0
  EXPECT_NE(s.FindPod(PodUid("a-0")), nullptr);
  EXPECT_EQ(s.Unreserve(GangKey("ml/a")).code(), StatusCode::kNotFound);
  EXPECT_TRUE(s.CheckInvariantsForTest().ok());
}

TEST(ClusterStateTest, RemoveNodeDropsItsPodsAndPlans) {
  ClusterState s = TwoNodes();
  ASSERT_TRUE(s.Allocate(PodUid("p"), NodeName("n1"), Mask({0})).ok());
  std::vector<MemberPlacement> members{{NodeName("n1"), Mask({1}), 0}, {NodeName("n2"), Mask({1}), 0}};
  ASSERT_TRUE(s.Reserve(GangKey("ml/a"), members).ok());
  Result<NodeRemoval> r = s.RemoveNode(NodeName("n1"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->pods, UnorderedElementsAre(PodUid("p")));
  EXPECT_THAT(r->plans, UnorderedElementsAre(GangKey("ml/a")));
  EXPECT_EQ(s.FindPod(PodUid("p")), nullptr);
  EXPECT_EQ(s.FindReservation(GangKey("ml/a")), nullptr);
  EXPECT_EQ(s.FreeGpus(), 8);  // n2's reserved GPU came back
  EXPECT_EQ(s.NodeCount(), 1);
  EXPECT_EQ(s.RemoveNode(NodeName("n1")).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(s.CheckInvariantsForTest().ok());
  // The slot is reused.
  ASSERT_TRUE(s.AddNode(MakeNode("n3").NvSwitch().Rack("r2").Pool("H100").Build()).ok());
  EXPECT_TRUE(s.CheckInvariantsForTest().ok());
}

TEST(ClusterStateTest, UpdateNodeChangesHealthLabelsAndCordon) {
  ClusterState s = TwoNodes();
  ASSERT_TRUE(s.Allocate(PodUid("p"), NodeName("n1"), Mask({7})).ok());
  ASSERT_TRUE(s.UpdateNode(MakeNode("n1").NvSwitch().Rack("r2").Pool("H100").Unhealthy({0, 7}).Build()).ok());
  const NodeIndex n1 = Idx(s, "n1");
  // GPU 7 stays allocated although unhealthy; GPU 0 is not free any more.
  EXPECT_EQ(s.node(n1).free, Mask({1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(s.FindPod(PodUid("p"))->gpus, Mask({7}));
  EXPECT_EQ(s.domain(2, s.FindDomain(2, "r2")).nodes.size(), 1u);
  EXPECT_EQ(s.domain(2, s.FindDomain(2, "r1")).nodes.size(), 1u);
  ASSERT_TRUE(s.UpdateNode(MakeNode("n1").NvSwitch().Rack("r2").Pool("H100").Cordoned().Build()).ok());
  EXPECT_EQ(s.node(n1).free, 0u);
  EXPECT_EQ(s.TotalGpus(), 8);
  Status shrink = s.UpdateNode(MakeNode("n1").Gpus(4).Build());
  EXPECT_EQ(shrink.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.UpdateNode(MakeNode("nx").Build()).code(), StatusCode::kNotFound);
  EXPECT_TRUE(s.CheckInvariantsForTest().ok());
}

TEST(ClusterStateTest, CopyIsIndependent) {
  ClusterState s = TwoNodes();
  ASSERT_TRUE(s.Allocate(PodUid("p"), NodeName("n1"), Mask({0, 1})).ok());
  ClusterState copy = s;
  ASSERT_TRUE(copy.Release(PodUid("p")).ok());
  EXPECT_TRUE(copy.CheckInvariantsForTest().ok());
  EXPECT_TRUE(s.CheckInvariantsForTest().ok());
  EXPECT_NE(s.FindPod(PodUid("p")), nullptr);
  EXPECT_EQ(s.FreeGpus(), 14);
  EXPECT_EQ(copy.FreeGpus(), 16);
}

// stamp() is what a cached answer is keyed on: every mutator must renew it, and no two
// different contents may share one (copies that diverge, a moved-from state).
TEST(ClusterStateTest, StampChangesWithEveryMutationAndIsNeverShared) {
  ClusterState s = TwoNodes();
  std::set<uint64_t> seen = {s.stamp()};
  auto changed = [&](const char* what) {
    EXPECT_TRUE(seen.insert(s.stamp()).second) << what << " kept an earlier stamp";
  };
  const uint64_t before_reads = s.stamp();
  (void)s.FindNode(NodeName("n1"));
  (void)s.FreeMilli(Idx(s, "n1"), 0);
  EXPECT_EQ(s.stamp(), before_reads) << "a read changed the stamp";
  ASSERT_TRUE(s.Allocate(PodUid("p"), NodeName("n1"), Mask({0})).ok());
  changed("Allocate");
  ASSERT_TRUE(s.AllocateShare(PodUid("s"), NodeName("n1"), 1, 500).ok());
  changed("AllocateShare");
  ASSERT_TRUE(s.Release(PodUid("s")).ok());
  changed("Release");
  ASSERT_TRUE(s.Reserve(GangKey("ns/g"), std::vector<MemberPlacement>{{NodeName("n2"), Mask({0, 1}), 0}}).ok());
  changed("Reserve");
  ASSERT_TRUE(s.Commit(GangKey("ns/g"), 0, PodUid("m0")).ok());
  changed("Commit");
  ASSERT_TRUE(s.Reserve(GangKey("ns/h"), std::vector<MemberPlacement>{{NodeName("n2"), Mask({2}), 0}}).ok());
  changed("Reserve");
  ASSERT_TRUE(s.Unreserve(GangKey("ns/h")).ok());
  changed("Unreserve");
  ASSERT_TRUE(s.UpdateNode(MakeNode("n2").NvSwitch().Rack("r1").Pool("H100").Cordoned().Build()).ok());
  changed("UpdateNode");
  ASSERT_TRUE(s.AddNode(MakeNode("n3").NvSwitch().Rack("r1").Pool("H100").Build()).ok());
  changed("AddNode");
  ASSERT_TRUE(s.RemoveNode(NodeName("n3")).ok());
  changed("RemoveNode");
  EXPECT_FALSE(s.Release(PodUid("nobody")).ok());
  changed("a failed Release");  // a mutator may have changed something before failing

  ClusterState copy = s;  // same content, same stamp; then they diverge
  EXPECT_EQ(copy.stamp(), s.stamp());
  ASSERT_TRUE(copy.Release(PodUid("p")).ok());
  EXPECT_TRUE(seen.insert(copy.stamp()).second);
  ClusterState moved = std::move(copy);
  EXPECT_NE(copy.stamp(), moved.stamp()) << "a moved-from state kept the stamp of the content it lost";  // NOLINT
}

// Random mutations keep every index consistent (seeded, so reproducible).
TEST(ClusterStateTest, RandomMutationsKeepIndexesConsistent) {
  std::mt19937 rng(42);
  ClusterState s(StandardLevels());
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(s.AddNode(MakeNode(Numbered("n", i))
                              .NvSwitch()
                              .Rack(Numbered("r", i % 4))
                              .Pool(i % 3 ? "H100" : "A100")
                              .Build())
                    .ok());
  }
  int next = 0;
  std::vector<PodUid> pods;
  for (int step = 0; step < 2000; ++step) {
    const int op = static_cast<int>(rng() % 6);
    const std::string node = Numbered("n", rng() % 20);
    if (op <= 1) {
      PodUid p(Numbered("p", next++));
      if (s.Allocate(p, NodeName(node), Mask({static_cast<int>(rng() % 8)})).ok()) pods.push_back(p);
    } else if (op == 2) {
      PodUid p(Numbered("p", next++));
      if (s.AllocateShare(p, NodeName(node), static_cast<int>(rng() % 8), 1 + static_cast<int>(rng() % 600)).ok()) {
        pods.push_back(p);
      }
    } else if (op == 3 && !pods.empty()) {
      const size_t k = rng() % pods.size();
      ASSERT_TRUE(s.Release(pods[k]).ok());
      pods.erase(pods.begin() + static_cast<std::ptrdiff_t>(k));
    } else if (op == 4) {
      GangKey plan(Numbered("g", next++));
      std::vector<MemberPlacement> m{{NodeName(node), Mask({static_cast<int>(rng() % 8)}), 0}};
      if (s.Reserve(plan, m).ok() && rng() % 2) {
        PodUid p(Numbered("p", next++));
        ASSERT_TRUE(s.Commit(plan, 0, p).ok());
        pods.push_back(p);
      }
    } else {
      NodeSpec spec = MakeNode(node).NvSwitch().Rack(Numbered("r", rng() % 4)).Pool("H100").Build();
      spec.healthy &= ~Mask({static_cast<int>(rng() % 8)});
      spec.schedulable = rng() % 5 != 0;
      ASSERT_TRUE(s.UpdateNode(spec).ok());
    }
    Status inv = s.CheckInvariantsForTest();
    ASSERT_TRUE(inv.ok()) << "step " << step << ": " << inv;
  }
}

}  // namespace
}  // namespace phalanx::placement
