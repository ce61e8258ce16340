#include "core/placement/gang_plan.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <tuple>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/unit/core/placement/placement_builders.h"

namespace phalanx::placement {
namespace {

using ::testing::HasSubstr;
using namespace ::phalanx::placement::testing;

GangSpec Gang(std::string key, int members, int gpus, TopologyMode mode = TopologyMode::kNone,
              std::string level = "") {
  GangSpec g;
  g.key = GangKey(std::move(key));
  g.members = members;
  g.gpus_per_member = gpus;
  g.mode = mode;
  g.level = std::move(level);
  return g;
}

GangPlanResult MustPlan(const ClusterState& s, const GangSpec& g, const PlanOptions& o = {}) {
  Result<GangPlanResult> r = PlanGang(s, g, o);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : GangPlanResult{};
}

std::map<std::string, int> MembersPerNode(const GangPlan& p) {
  std::map<std::string, int> out;
  for (const MemberPlacement& m : p.members) ++out[m.node.str()];
  return out;
}

TEST(GangPlanTest, PacksMembersOntoFewestNodes) {
  ClusterState s(StandardLevels());
  AddRack(s, "n", 4, "r1");
  // 4 members x 2 GPUs fit on one 8-GPU node: fewest nodes = 1.
  GangPlanResult r = MustPlan(s, Gang("ml/a", 4, 2));
  ASSERT_TRUE(r.fits());
  EXPECT_EQ(r.plan->quality.nodes_used, 1);
  EXPECT_EQ(r.plan->members.size(), 4u);
  GpuMask all = 0;
  for (const MemberPlacement& m : r.plan->members) {
    EXPECT_EQ(GpuCount(m.gpus), 2);
    EXPECT_EQ(all & m.gpus, 0u) << "members overlap";
    all |= m.gpus;
    EXPECT_EQ(m.ring_bandwidth_gbps, kNvSwitchGbps);
  }
  EXPECT_EQ(r.plan->level, -1);
  EXPECT_EQ(r.plan->quality.mean_topology_ratio, 1.0);
}

TEST(GangPlanTest, BestFitPrefersFullerNodes) {
  ClusterState s(StandardLevels());
  AddRack(s, "n", 3, "r1");
  ASSERT_TRUE(s.Allocate(PodUid("x"), NodeName("n1"), Mask({0, 1, 2, 3, 4, 5})).ok());  // n1: 2 free
  ASSERT_TRUE(s.Allocate(PodUid("y"), NodeName("n2"), Mask({0, 1, 2, 3})).ok());        // n2: 4 free
  // One member of 2 GPUs: n1 (2 free) is the best fit and stays the only partial node.
  GangPlanResult r = MustPlan(s, Gang("ml/a", 1, 2));
  ASSERT_TRUE(r.fits());
  EXPECT_EQ(r.plan->members[0].node, NodeName("n1"));
  EXPECT_EQ(r.plan->members[0].gpus, Mask({6, 7}));
  // Three members of 2: n0 hosts all 3 at once (fewest nodes beats best fit).
  r = MustPlan(s, Gang("ml/b", 3, 2));
  ASSERT_TRUE(r.fits());
  EXPECT_EQ(r.plan->quality.nodes_used, 1);
  // The smallest node that takes all 3 is n0 (the only one with >= 6 free).
  EXPECT_EQ(MembersPerNode(*r.plan), (std::map<std::string, int>{{"n0", 3}}));
  // Six members of 2 (12 GPUs): no node hosts 6, so n0 takes 4; the remaining 2 fit
  // on n2 (hosts 2) but not on n1 (hosts 1): n0 + n2, two nodes.
  r = MustPlan(s, Gang("ml/c", 6, 2));
  ASSERT_TRUE(r.fits());
  EXPECT_EQ(MembersPerNode(*r.plan), (std::map<std::string, int>{{"n0", 4}, {"n2", 2}}));
}

TEST(GangPlanTest, EqualMemberCapacityGoesToTheFullerNode) {
  ClusterState s(StandardLevels());
  AddRack(s, "n", 2, "r1");
  ASSERT_TRUE(s.Allocate(PodUid("x"), NodeName("n0"), Mask({0})).ok());           // n0: 7 free
  ASSERT_TRUE(s.Allocate(PodUid("y"), NodeName("n1"), Mask({0, 1, 2, 3})).ok());  // n1: 4 free
  // Both host one member of 4; n1 ends full, n0 keeps 7 GPUs together.
  GangPlanResult r = MustPlan(s, Gang("ml/a", 1, 4));
  ASSERT_TRUE(r.fits());
  EXPECT_EQ(r.plan->members[0].node, NodeName("n1"));
}

TEST(GangPlanTest, AllOrNothingWhenTheGangIsTooBig) {
  ClusterState s(StandardLevels());
  AddRack(s, "n", 4, "r1");
  // 5 x 8 = 40 GPUs > 32 free.
  GangPlanResult r = MustPlan(s, Gang("ml/a", 5, 8));
  ASSERT_FALSE(r.fits());
  EXPECT_EQ(r.no_fit->reason, NoFitReason::kTooFewGpusInPool);
  EXPECT_EQ(r.no_fit->Message(), "needs 5 members x 8 GPUs (40 GPUs); pool H100 has 32 free GPUs");
}

TEST(GangPlanTest, EnoughGpusButNotInChunks) {
  ClusterState s(StandardLevels());
  AddRack(s, "n", 2, "r1");
  ASSERT_TRUE(s.Allocate(PodUid("x"), NodeName("n0"), Mask({0, 1, 2, 3})).ok());
  ASSERT_TRUE(s.Allocate(PodUid("y"), NodeName("n1"), Mask({0, 1, 2, 3})).ok());
  // 8 GPUs free in total, but 4 per node: a member of 8 fits nowhere.
  GangPlanResult r = MustPlan(s, Gang("ml/a", 1, 8));
  ASSERT_FALSE(r.fits());
  EXPECT_EQ(r.no_fit->reason, NoFitReason::kTooFewMembersFit);
  EXPECT_THAT(r.no_fit->Message(), HasSubstr("has 8 free GPUs but fits 0 members"));
}

TEST(GangPlanTest, TwoGangsThatOnlyFitOneAtATime) {
  ClusterState s(StandardLevels());
  AddRack(s, "n", 4, "r1");
  GangPlanResult a = MustPlan(s, Gang("ml/a", 3, 8));
  ASSERT_TRUE(a.fits());
  ASSERT_TRUE(ReservePlan(s, *a.plan).ok());
  // B needs 3 nodes; A's reservation leaves one.
  GangPlanResult b = MustPlan(s, Gang("ml/b", 3, 8));
  ASSERT_FALSE(b.fits());
  EXPECT_EQ(b.no_fit->best_free_gpus, 8);
  ASSERT_TRUE(s.Unreserve(GangKey("ml/a")).ok());
  EXPECT_TRUE(MustPlan(s, Gang("ml/b", 3, 8)).fits());
}

TEST(GangPlanTest, NeverOffersGpusReservedByAnotherPlan) {
  ClusterState s(StandardLevels());
  AddRack(s, "n", 1, "r1");
  std::vector<MemberPlacement> held{{NodeName("n0"), Mask({0, 1, 2, 3}), 0}};
  ASSERT_TRUE(s.Reserve(GangKey("ml/other"), held).ok());
  GangPlanResult r = MustPlan(s, Gang("ml/a", 2, 2));
  ASSERT_TRUE(r.fits());
  for (const MemberPlacement& m : r.plan->members) EXPECT_EQ(m.gpus & Mask({0, 1, 2, 3}), 0u);
  EXPECT_FALSE(MustPlan(s, Gang("ml/b", 1, 8)).fits());
  // The owner may re-plan over its own reservation.
  PlanOptions own;
  own.own_plan = GangKey("ml/other");
  EXPECT_TRUE(MustPlan(s, Gang("ml/other", 1, 8), own).fits());
}

TEST(GangPlanTest, RequiredRackNeverSplits) {
  ClusterState s(StandardLevels());
  AddRack(s, "a", 2, "r1");
  AddRack(s, "b", 2, "r2");
  // 3 x 8 needs 3 whole nodes in one rack; each rack has 2.
  GangPlanResult r = MustPlan(s, Gang("ml/a", 3, 8, TopologyMode::kRequired, kRack));
  ASSERT_FALSE(r.fits());
  EXPECT_EQ(r.no_fit->reason, NoFitReason::kNoDomainLargeEnough);
  EXPECT_EQ(r.no_fit->Message(),
            "needs 3 members x 8 GPUs (24 GPUs) in one topology.kubernetes.io/rack; the best rack (r1) has 16 free "
            "GPUs and fits 2 members");
  // Two members fit in one rack, and every member is in that rack.
  r = MustPlan(s, Gang("ml/b", 2, 8, TopologyMode::kRequired, kRack));
  ASSERT_TRUE(r.fits());
  EXPECT_EQ(r.plan->level_key, kRack);
  const std::string rack = r.plan->domain;
  for (const MemberPlacement& m : r.plan->members) {
    EXPECT_EQ(s.node(*s.FindNode(m.node)).spec.domains[2], rack);
  }
}

TEST(GangPlanTest, RequiredLevelPicksTheSmallestFittingDomain) {
  ClusterState s(StandardLevels());
  AddRack(s, "a", 4, "r1");
  AddRack(s, "b", 2, "r2");
  AddRack(s, "c", 1, "r3");
  // 2 x 8: r2 (2 nodes) fits exactly; r1 stays whole for a bigger gang.
  GangPlanResult r = MustPlan(s, Gang("ml/a", 2, 8, TopologyMode::kRequired, kRack));
  ASSERT_TRUE(r.fits());
  EXPECT_EQ(r.plan->domain, "r2");
  EXPECT_EQ(r.plan->quality.free_gpus_left_in_domain, 0);
}

TEST(GangPlanTest, PreferredFallsBackToWiderLevelsThenAnywhere) {
  ClusterState s(StandardLevels());
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(s.AddNode(MakeNode(Numbered("n", i))
                              .NvSwitch()
                              .Rack(i < 2 ? "r1" : "r2")
                              .Zone("z1")
                              .Pool("H100")
                              .Build())
                    .ok());
  }
  // 3 nodes: no rack fits, the zone (level 3) does.
  GangPlanResult r = MustPlan(s, Gang("ml/a", 3, 8, TopologyMode::kPreferred, kRack));
  ASSERT_TRUE(r.fits());
  EXPECT_TRUE(r.plan->quality.fell_back);
  EXPECT_EQ(r.plan->level_key, kZone);
  EXPECT_EQ(r.plan->domain, "z1");
  // Preferred rack that fits: no fallback.
  r = MustPlan(s, Gang("ml/b", 2, 8, TopologyMode::kPreferred, kRack));
  ASSERT_TRUE(r.fits());
  EXPECT_FALSE(r.plan->quality.fell_back);
  EXPECT_EQ(r.plan->level_key, kRack);
  // A node without a zone label: preferred nvlink-domain (no node labelled) falls back
  // all the way to the pool.
  ASSERT_TRUE(s.AddNode(MakeNode("n9").NvSwitch().Pool("H100").Build()).ok());
  r = MustPlan(s, Gang("ml/c", 5, 8, TopologyMode::kPreferred, kNvlinkDomain));
  ASSERT_TRUE(r.fits());
  EXPECT_EQ(r.plan->level, -1);
  EXPECT_TRUE(r.plan->quality.fell_back);
}

TEST(GangPlanTest, RequiredLevelWithoutLabelsSaysSo) {
  ClusterState s(StandardLevels());
  AddRack(s, "n", 2, "r1");
  GangPlanResult r = MustPlan(s, Gang("ml/a", 1, 8, TopologyMode::kRequired, kNvlinkDomain));
  ASSERT_FALSE(r.fits());
  EXPECT_EQ(r.no_fit->reason, NoFitReason::kNodesUnlabelled);
  EXPECT_THAT(r.no_fit->Message(), HasSubstr("no node of pool H100 has the label phalanx.io/nvlink-domain"));
}

TEST(GangPlanTest, ChoosesNvlinkPairsOnPcieNodes) {
  ClusterState s(StandardLevels());
  ASSERT_TRUE(s.AddNode(MakeNode("p0").PcieFour().Pool("T4").Build()).ok());
  ASSERT_TRUE(s.Allocate(PodUid("x"), NodeName("p0"), Mask({0})).ok());
  // Free {1,2,3}: the NVLink pair {2,3} (100 GB/s), not {1,2} (SYS, 10 GB/s).
  GangPlanResult r = MustPlan(s, Gang("ml/a", 1, 2));
  ASSERT_TRUE(r.fits());
  EXPECT_EQ(r.plan->members[0].gpus, Mask({2, 3}));
  EXPECT_EQ(r.plan->quality.min_ring_bandwidth_gbps, kNv4Gbps);
  EXPECT_EQ(r.plan->quality.mean_topology_ratio, 1.0);
  // Two members of 2 on free {1,2,3} + ... only 3 free: does not fit.
  EXPECT_FALSE(MustPlan(s, Gang("ml/b", 2, 2)).fits());
}

TEST(GangPlanTest, TopologyRatioReportsSplitPairs) {
  ClusterState s(StandardLevels());
  ASSERT_TRUE(s.AddNode(MakeNode("p0").PcieFour().Pool("T4").Build()).ok());
  ASSERT_TRUE(s.Allocate(PodUid("x"), NodeName("p0"), Mask({0, 3})).ok());
  // Only {1,2} left: ring = SYS 10 GB/s, best pair on the node = 100 -> ratio 0.1.
  GangPlanResult r = MustPlan(s, Gang("ml/a", 1, 2));
  ASSERT_TRUE(r.fits());
  EXPECT_DOUBLE_EQ(r.plan->quality.mean_topology_ratio, 0.1);
}

TEST(GangPlanTest, PoolRestrictionAndAnyPool) {
  ClusterState s(StandardLevels());
  AddRack(s, "h", 1, "r1", 8, "H100");
  AddRack(s, "a", 2, "r2", 8, "A100");
  GangSpec g = Gang("ml/a", 2, 8);
  g.pool = "H100";
  GangPlanResult r = MustPlan(s, g);
  ASSERT_FALSE(r.fits());
  EXPECT_EQ(r.no_fit->pool, "H100");
  g.pool = "B200";
  r = MustPlan(s, g);
  ASSERT_FALSE(r.fits());
  EXPECT_EQ(r.no_fit->reason, NoFitReason::kNoPool);
  // Any pool: only A100 hosts both members, and a gang never spans pools.
  g.pool.reset();
  r = MustPlan(s, g);
  ASSERT_TRUE(r.fits());
  EXPECT_EQ(r.plan->pool, "A100");
  EXPECT_EQ(MembersPerNode(*r.plan), (std::map<std::string, int>{{"a0", 1}, {"a1", 1}}));
}

// A gang that may run in any pool goes where the most GPUs stay free, not to the fullest
// pool: under overload the fullest pool is the contended one, and the flexible gang would take
// the GPUs its own gangs wait for. Within the chosen pool, nodes are still best fit.
TEST(GangPlanTest, AnyPoolGoesToThePoolWithTheMostGpusLeftFree) {
  ClusterState s(StandardLevels());
  AddRack(s, "h", 2, "r1", 8, "H100");
  AddRack(s, "a", 3, "r2", 8, "A100");
  // H100: 4 free GPUs in all (fullest); A100: 14 free, a2's 6 the best-fitting node.
  ASSERT_TRUE(s.Allocate(PodUid("h0"), NodeName("h0"), Mask({0, 1, 2, 3, 4, 5, 6, 7})).ok());
  ASSERT_TRUE(s.Allocate(PodUid("h1"), NodeName("h1"), Mask({0, 1, 2, 3})).ok());
  ASSERT_TRUE(s.Allocate(PodUid("a0"), NodeName("a0"), Mask({0, 1, 2, 3, 4, 5, 6, 7})).ok());
  ASSERT_TRUE(s.Allocate(PodUid("a2"), NodeName("a2"), Mask({0, 1})).ok());
  GangPlanResult r = MustPlan(s, Gang("ml/a", 1, 4));
  ASSERT_TRUE(r.fits());
  EXPECT_EQ(r.plan->pool, "A100");
  EXPECT_EQ(MembersPerNode(*r.plan), (std::map<std::string, int>{{"a2", 1}}));
  EXPECT_EQ(r.plan->quality.free_gpus_left_in_pool, 10);
  // Named, the fuller pool is still used.
  GangSpec named = Gang("ml/b", 1, 4);
  named.pool = "H100";
  r = MustPlan(s, named);
  ASSERT_TRUE(r.fits());
  EXPECT_EQ(r.plan->pool, "H100");
  EXPECT_EQ(r.plan->quality.free_gpus_left_in_pool, 0);
}

// A preferred topology level still comes first: a pool where the gang fits in one rack wins
// over one with more free GPUs where it would have to spread.
TEST(GangPlanTest, AnyPoolHonoursAPreferredLevelBeforeFreeGpus) {
  ClusterState s(StandardLevels());
  AddRack(s, "h", 2, "r1", 8, "H100");
  AddRack(s, "a", 2, "r2", 8, "A100");
  AddRack(s, "b", 2, "r3", 8, "A100");
  ASSERT_TRUE(s.Allocate(PodUid("a0"), NodeName("a0"), Mask({0, 1, 2, 3, 4, 5, 6, 7})).ok());
  ASSERT_TRUE(s.Allocate(PodUid("b0"), NodeName("b0"), Mask({0, 1, 2, 3, 4, 5, 6, 7})).ok());
  AddRack(s, "c", 1, "r4", 8, "A100");
  // A100: 24 free GPUs, one free node per rack; H100: 16, both nodes in rack r1.
  GangPlanResult r = MustPlan(s, Gang("ml/a", 2, 8, TopologyMode::kPreferred, kRack));
  ASSERT_TRUE(r.fits());
  EXPECT_EQ(r.plan->pool, "H100");
  EXPECT_FALSE(r.plan->quality.fell_back);
}

TEST(GangPlanTest, UnknownTopologyTakesLowestFreeGpus) {
  ClusterState s(StandardLevels());
  ASSERT_TRUE(s.AddNode(MakeNode("u0").Gpus(4).Build()).ok());
  ASSERT_TRUE(s.Allocate(PodUid("x"), NodeName("u0"), Mask({0})).ok());
  GangPlanResult r = MustPlan(s, Gang("ml/a", 1, 2));
  ASSERT_TRUE(r.fits());
  EXPECT_EQ(r.plan->members[0].gpus, Mask({1, 2}));
  EXPECT_EQ(r.plan->quality.min_ring_bandwidth_gbps, 0);
}

TEST(GangPlanTest, SkipsUnhealthyAndCordoned) {
  ClusterState s(StandardLevels());
  ASSERT_TRUE(s.AddNode(MakeNode("n0").NvSwitch().Unhealthy({3}).Build()).ok());
  ASSERT_TRUE(s.AddNode(MakeNode("n1").NvSwitch().Cordoned().Build()).ok());
  EXPECT_FALSE(MustPlan(s, Gang("ml/a", 1, 8)).fits());
  GangPlanResult r = MustPlan(s, Gang("ml/b", 1, 7));
  ASSERT_TRUE(r.fits());
  EXPECT_EQ(r.plan->members[0].gpus & Mask({3}), 0u);
}

TEST(GangPlanTest, AssumeReleasedFreesPodsGpus) {
  ClusterState s(StandardLevels());
  AddRack(s, "n", 1, "r1");
  ASSERT_TRUE(s.Allocate(PodUid("x"), NodeName("n0"), Mask({0, 1, 2, 3})).ok());
  EXPECT_FALSE(MustPlan(s, Gang("ml/a", 1, 8)).fits());
  std::vector<PodUid> released{PodUid("x"), PodUid("unknown")};
  PlanOptions o;
  o.assume_released = released;
  EXPECT_TRUE(MustPlan(s, Gang("ml/a", 1, 8), o).fits());
}

// Seeded random clusters: the plan is valid (free, disjoint, right size, one domain
// when required) and "fits" agrees with a brute-force capacity count over all nodes.
TEST(GangPlanTest, RandomClustersAgreeWithBruteForce) {
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    ClusterState s(StandardLevels());
    const int nodes = 1 + static_cast<int>(rng() % 12);
    for (int i = 0; i < nodes; ++i) {
      ASSERT_TRUE(s.AddNode(MakeNode(Numbered("n", i)).NvSwitch().Rack(Numbered("r", rng() % 3)).Pool("H100").Build())
                      .ok());
      const GpuMask used = static_cast<GpuMask>(rng() & 0xff);
      if (used) {
        ASSERT_TRUE(s.Allocate(PodUid(Numbered("p", i)), NodeName(Numbered("n", i)), used).ok());
      }
    }
    const int g = 1 + static_cast<int>(rng() % 8);
    const int members = 1 + static_cast<int>(rng() % 6);
    const bool required = rng() % 2;
    GangSpec spec = Gang("ml/r", members, g, required ? TopologyMode::kRequired : TopologyMode::kNone, kRack);
    std::map<std::string, int> cap_by_rack;
    int cap_total = 0;
    for (NodeIndex i : s.Nodes()) {
      const int cap = GpuCount(s.node(i).free) / g;
      cap_by_rack[s.node(i).spec.domains[2]] += cap;
      cap_total += cap;
    }
    bool expect_fit = cap_total >= members;
    if (required) {
      expect_fit = false;
      for (const auto& [rack, cap] : cap_by_rack) expect_fit |= cap >= members;
    }
    SCOPED_TRACE(::testing::Message() << "round " << round << " members " << members << " x " << g
                                      << (required ? " rack-required" : ""));
    GangPlanResult r = MustPlan(s, spec);
    ASSERT_EQ(r.fits(), expect_fit);
    if (!r.fits()) continue;
    ASSERT_EQ(static_cast<int>(r.plan->members.size()), members);
    std::map<std::string, GpuMask> taken;
    for (const MemberPlacement& m : r.plan->members) {
      const NodeState& n = s.node(*s.FindNode(m.node));
      EXPECT_EQ(GpuCount(m.gpus), g);
      EXPECT_EQ(m.gpus & ~n.free, 0u) << "uses a GPU that is not free";
      EXPECT_EQ(taken[m.node.str()] & m.gpus, 0u) << "members overlap";
      taken[m.node.str()] |= m.gpus;
      if (required) {
        EXPECT_EQ(n.spec.domains[2], r.plan->domain);
      }
    }
    EXPECT_EQ(r.plan->quality.nodes_used, static_cast<int>(taken.size()));
  }
}

// The packing order (gang_plan.h): most members per node first, then the fullest node, then
// by name; the rest of the gang goes to the smallest node that takes it all. The planner
// heaps nodes per capacity instead of sorting the pool; this is the order written out as a
// sort, on clusters large enough for many ties.
std::map<std::string, int> ReferencePacking(const ClusterState& s, int members, int g) {
  struct Cand {
    std::string name;
    int cap, free;
  };
  std::vector<Cand> cands;
  for (NodeIndex i : s.Nodes()) {
    const int free = GpuCount(s.node(i).free);
    if (free >= g) cands.push_back({s.node(i).spec.name.str(), free / g, free});
  }
  std::sort(cands.begin(), cands.end(), [](const Cand& a, const Cand& b) {
    return std::tie(b.cap, a.free, a.name) < std::tie(a.cap, b.free, b.name);
  });
  std::map<std::string, int> out;
  int remaining = members;
  size_t front = 0;
  while (remaining > 0 && front < cands.size()) {
    size_t fit = cands.size();  // the last node (in order) that takes all the rest
    for (size_t i = front; i < cands.size() && cands[i].cap >= remaining; ++i) fit = i;
    if (fit != cands.size()) {
      size_t first = fit;  // the first node of that capacity
      while (first > front && cands[first - 1].cap == cands[fit].cap) --first;
      out[cands[first].name] += remaining;
      remaining = 0;
    } else {
      out[cands[front].name] += cands[front].cap;
      remaining -= cands[front].cap;
      ++front;
    }
  }
  return out;
}

TEST(GangPlanTest, PackingFollowsTheDocumentedOrderOnLargeRandomPools) {
  std::mt19937 rng(11);
  for (int round = 0; round < 100; ++round) {
    ClusterState s(StandardLevels());
    const int nodes = 20 + static_cast<int>(rng() % 200);
    for (int i = 0; i < nodes; ++i) {
      // Random names, so that name order is not insertion order; a repeated one is refused.
      (void)s.AddNode(MakeNode(Numbered("n", static_cast<int>(rng() % 100000))).NvSwitch().Pool("H100").Build());
    }
    int p = 0;
    for (NodeIndex i : s.Nodes()) {
      // Mostly full or mostly free nodes: many ties in capacity and free count.
      const GpuMask used = rng() % 3 == 0 ? 0 : static_cast<GpuMask>(rng() & 0xff);
      if (used) {
        ASSERT_TRUE(s.Allocate(PodUid(Numbered("p", p++)), s.node(i).spec.name, used).ok());
      }
    }
    const int g = 1 + static_cast<int>(rng() % 8);
    const int members = 1 + static_cast<int>(rng() % 40);
    SCOPED_TRACE(::testing::Message() << "round " << round << " members " << members << " x " << g);
    GangPlanResult r = MustPlan(s, Gang("ml/pack", members, g));
    const std::map<std::string, int> expected = ReferencePacking(s, members, g);
    int placed = 0;
    for (const auto& [node, k] : expected) placed += k;
    ASSERT_EQ(r.fits(), placed == members);
    if (r.fits()) {
      EXPECT_EQ(MembersPerNode(*r.plan), expected);
    }
  }
}

TEST(GangPlanTest, RejectsMalformedSpecs) {
  ClusterState s(StandardLevels());
  EXPECT_EQ(PlanGang(s, Gang("ml/a", 0, 1)).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(PlanGang(s, Gang("ml/a", 1, 65)).status().code(), StatusCode::kInvalidArgument);
  Result<GangPlanResult> r = PlanGang(s, Gang("ml/a", 1, 1, TopologyMode::kRequired, "example.com/row"));
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("example.com/row is not configured"));
}

}  // namespace
}  // namespace phalanx::placement
