#include "core/placement/preemption.h"

#include <random>

#include <gmock/gmock.h>
#include <deque>
#include <span>

#include <gtest/gtest.h>

#include "tests/unit/core/placement/placement_builders.h"

namespace phalanx::placement {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace ::phalanx::placement::testing;

constexpr int kSpot = 100;
constexpr int kStandard = 1000;
constexpr int kHigh = 10000;

// VictimGang::pods is a view: the pods it names live here for the whole test binary.
std::span<const PodUid> Keep(std::vector<PodUid> pods) {
  static std::deque<std::vector<PodUid>> kept;
  return kept.emplace_back(std::move(pods));
}

// Allocates every GPU of each listed node to one pod of the victim gang.
VictimGang Victim(ClusterState& s, std::string key, int priority, double risk, std::vector<std::string> nodes,
                  double notice = 0) {
  VictimGang v;
  v.key = GangKey(key);
  v.priority = priority;
  v.gpu_seconds_at_risk = risk;
  v.notice_seconds_needed = notice;
  std::vector<PodUid> pods;
  for (size_t i = 0; i < nodes.size(); ++i) {
    PodUid pod(key + "-" + std::to_string(i));
    EXPECT_TRUE(s.Allocate(pod, NodeName(nodes[i]), AllGpus(8), priority).ok());
    pods.push_back(pod);
  }
  v.pods = Keep(std::move(pods));
  return v;
}

PreemptionRequest Request(int members, int gpus, int priority, const std::vector<VictimGang>& victims) {
  PreemptionRequest r;
  r.preemptor.key = GangKey("ml/preemptor");
  r.preemptor.members = members;
  r.preemptor.gpus_per_member = gpus;
  r.priority = priority;
  r.candidates = victims;
  return r;
}

PreemptionResult MustChoose(const ClusterState& s, const PreemptionRequest& r) {
  Result<PreemptionResult> out = ChoosePreemption(s, r);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *out : PreemptionResult{};
}

TEST(PreemptionTest, PicksTheWholeGangWithTheLeastWorkAtRisk) {
  ClusterState s(StandardLevels());
  AddRack(s, "n", 4, "r1");
  std::vector<VictimGang> v;
  v.push_back(Victim(s, "ml/expensive", kSpot, 1000, {"n0", "n1"}));
  v.push_back(Victim(s, "ml/cheap", kSpot, 500, {"n2", "n3"}));
  PreemptionResult r = MustChoose(s, Request(2, 8, kHigh, v));
  ASSERT_TRUE(r.helps());
  EXPECT_THAT(r.decision->victims, ElementsAre(1));
  EXPECT_EQ(r.decision->gpu_seconds_lost, 500);
  EXPECT_EQ(r.decision->gpus_freed, 16);
  EXPECT_EQ(r.decision->plan.members.size(), 2u);
  for (const MemberPlacement& m : r.decision->plan.members) {
    EXPECT_TRUE(m.node == NodeName("n2") || m.node == NodeName("n3")) << m.node;
  }
}

TEST(PreemptionTest, LowestTierBeatsLeastWork) {
  ClusterState s(StandardLevels());
  AddRack(s, "n", 2, "r1");
  std::vector<VictimGang> v;
  v.push_back(Victim(s, "ml/standard", kStandard, 1, {"n0"}));
  v.push_back(Victim(s, "ml/spot", kSpot, 100000, {"n1"}));
  PreemptionResult r = MustChoose(s, Request(1, 8, kHigh, v));
  ASSERT_TRUE(r.helps());
  EXPECT_THAT(r.decision->victims, ElementsAre(1));
  EXPECT_EQ(r.decision->highest_victim_priority, kSpot);
}

TEST(PreemptionTest, NeverEvictsPartOfAGang) {
  ClusterState s(StandardLevels());
  AddRack(s, "n", 2, "r1");
  std::vector<VictimGang> v;
  v.push_back(Victim(s, "ml/pair", kSpot, 10, {"n0", "n1"}));
  // One node is enough, but the victim is the whole gang: both pods, 16 GPUs.
  PreemptionResult r = MustChoose(s, Request(1, 8, kHigh, v));
  ASSERT_TRUE(r.helps());
  EXPECT_THAT(r.decision->victims, ElementsAre(0));
  EXPECT_EQ(r.decision->gpus_freed, 16);
}

TEST(PreemptionTest, OnlyStrictlyLowerPrioritiesAreVictims) {
  ClusterState s(StandardLevels());
  AddRack(s, "n", 1, "r1");
  std::vector<VictimGang> v;
  v.push_back(Victim(s, "ml/peer", kHigh, 1, {"n0"}));
  PreemptionResult r = MustChoose(s, Request(1, 8, kHigh, v));
  ASSERT_FALSE(r.helps());
  EXPECT_EQ(r.none->reason, NoVictimReason::kNoLowerPriorityVictims);
  EXPECT_EQ(r.none->Message(), "no lower-priority gang holds GPUs the preemptor could use");
}

TEST(PreemptionTest, VetoesWhenEvenAllVictimsAreNotEnough) {
  ClusterState s(StandardLevels());
  AddRack(s, "n", 2, "r1");
  std::vector<VictimGang> v;
  v.push_back(Victim(s, "ml/a", kSpot, 1, {"n0"}));
  v.push_back(Victim(s, "ml/b", kSpot, 1, {"n1"}));
  PreemptionResult r = MustChoose(s, Request(3, 8, kHigh, v));
  ASSERT_FALSE(r.helps());
  EXPECT_EQ(r.none->reason, NoVictimReason::kEvenAllVictimsTooFew);
  EXPECT_EQ(r.none->Message(),
            "even evicting every lower-priority gang: needs 3 members x 8 GPUs (24 GPUs); pool H100 has 16 free GPUs");
}

// max_candidates cuts the ranked candidates after a group of equal prices was taken whole:
// here the cheapest victim is handed to the search first, then a tie of four crosses the
// limit of three. The search must see the cheapest and two of the tie, in rank order (and,
// under ASan, must not read the first candidate from storage the tie reallocated).
TEST(PreemptionTest, ATieAcrossTheCandidateLimitIsCutAfterItsRankOrder) {
  for (VictimRank rank : {VictimRank::kTierThenLostWork, VictimRank::kCost}) {
    SCOPED_TRACE(rank == VictimRank::kCost ? "by cost" : "by tier, then lost work");
    ClusterState s(StandardLevels());
    AddRack(s, "n", 5, "r1");
    std::vector<VictimGang> v;
    v.push_back(Victim(s, "ml/cheap", kSpot, 100, {"n0"}));
    v.back().cost = 100;
    for (int i = 1; i <= 4; ++i) {
      v.push_back(Victim(s, "ml/tie-" + std::to_string(i), kSpot, 500, {"n" + std::to_string(i)}));
      v.back().cost = 500;
    }
    PreemptionRequest three = Request(3, 8, kHigh, v);
    three.rank = rank;
    three.limits.max_candidates = 3;
    PreemptionResult r = MustChoose(s, three);
    ASSERT_TRUE(r.helps());
    ASSERT_EQ(r.decision->victims.size(), 3u);
    EXPECT_EQ(r.decision->victims[0], 0) << "the cheapest first";
    for (size_t i = 1; i < 3; ++i) EXPECT_GE(r.decision->victims[i], 1);
    EXPECT_EQ(r.decision->gpus_freed, 24);
    // Four nodes need a fourth candidate: the limit kept three.
    PreemptionRequest four = Request(4, 8, kHigh, v);
    four.rank = rank;
    four.limits.max_candidates = 3;
    EXPECT_FALSE(MustChoose(s, four).helps());
    four.limits.max_candidates = 5;
    EXPECT_TRUE(MustChoose(s, four).helps());
  }
}

TEST(PreemptionTest, DropsVictimsThatTurnOutUnnecessary) {
  ClusterState s(StandardLevels());
  AddRack(s, "n", 3, "r1");
  // n0: a cheap spot pod holds 4 GPUs next to a high-tier pod holding the other 4, so
  // evicting it frees half a node: useless for 8-GPU members. Ranked first (cheapest),
  // added first, then dropped by minimisation.
  VictimGang half;
  half.key = GangKey("ml/half");
  half.priority = kSpot;
  half.gpu_seconds_at_risk = 1;
  half.pods = Keep({PodUid("half-0")});
  ASSERT_TRUE(s.Allocate(PodUid("half-0"), NodeName("n0"), Mask({0, 1, 2, 3}), kSpot).ok());
  ASSERT_TRUE(s.Allocate(PodUid("keeper"), NodeName("n0"), Mask({4, 5, 6, 7}), kHigh).ok());
  std::vector<VictimGang> v{half};
  v.push_back(Victim(s, "ml/b", kSpot, 2, {"n1"}));
  v.push_back(Victim(s, "ml/c", kSpot, 3, {"n2"}));
  PreemptionResult r = MustChoose(s, Request(2, 8, kHigh, v));
  ASSERT_TRUE(r.helps());
  EXPECT_THAT(r.decision->victims, ElementsAre(1, 2));
  EXPECT_EQ(r.decision->gpu_seconds_lost, 5);
}

TEST(PreemptionTest, RequiredRackChoosesTheRackWithTheCheapestVictims) {
  ClusterState s(StandardLevels());
  AddRack(s, "a", 2, "r1");
  AddRack(s, "b", 2, "r2");
  std::vector<VictimGang> v;
  // r1 costs 10 + 200 = 210, r2 costs 50 + 60 = 110. A rank-order greedy over the whole
  // cluster would start with the 10 in r1; per-rack search finds r2.
  v.push_back(Victim(s, "ml/v1", kSpot, 10, {"a0"}));
  v.push_back(Victim(s, "ml/v2", kSpot, 200, {"a1"}));
  v.push_back(Victim(s, "ml/v3", kSpot, 50, {"b0"}));
  v.push_back(Victim(s, "ml/v4", kSpot, 60, {"b1"}));
  PreemptionRequest req = Request(2, 8, kHigh, v);
  req.preemptor.mode = TopologyMode::kRequired;
  req.preemptor.level = kRack;
  PreemptionResult r = MustChoose(s, req);
  ASSERT_TRUE(r.helps());
  EXPECT_THAT(r.decision->victims, ElementsAre(2, 3));
  EXPECT_EQ(r.decision->plan.domain, "r2");
  EXPECT_EQ(r.decision->gpu_seconds_lost, 110);
}

TEST(PreemptionTest, NoVictimsWhenTheGangAlreadyFits) {
  ClusterState s(StandardLevels());
  AddRack(s, "n", 2, "r1");
  std::vector<VictimGang> v;
  v.push_back(Victim(s, "ml/a", kSpot, 1, {"n0"}));
  PreemptionResult r = MustChoose(s, Request(1, 8, kHigh, v));
  ASSERT_TRUE(r.helps());
  EXPECT_TRUE(r.decision->victims.empty());
  EXPECT_EQ(r.decision->plan.members[0].node, NodeName("n1"));
}

TEST(PreemptionTest, CountsVictimsThatNeedNotice) {
  ClusterState s(StandardLevels());
  AddRack(s, "n", 1, "r1");
  std::vector<VictimGang> v;
  v.push_back(Victim(s, "ml/training", kSpot, 1, {"n0"}, /*notice=*/30));
  PreemptionResult r = MustChoose(s, Request(1, 8, kHigh, v));
  ASSERT_TRUE(r.helps());
  EXPECT_EQ(r.decision->victims_needing_notice, 1);
}

TEST(PreemptionTest, SharedGpuFreesOnlyWhenEveryShareGoes) {
  ClusterState s(StandardLevels());
  ASSERT_TRUE(s.AddNode(MakeNode("n0").Gpus(1).NvSwitch().Pool("H100").Build()).ok());
  ASSERT_TRUE(s.AllocateShare(PodUid("s1"), NodeName("n0"), 0, 500, kSpot).ok());
  ASSERT_TRUE(s.AllocateShare(PodUid("s2"), NodeName("n0"), 0, 500, kHigh).ok());
  std::vector<VictimGang> v(1);
  v[0].key = GangKey("ml/s1");
  v[0].priority = kSpot;
  v[0].pods = Keep({PodUid("s1")});
  // The other share is of an equal tier: no eviction frees the GPU.
  PreemptionResult r = MustChoose(s, Request(1, 1, kHigh, v));
  ASSERT_FALSE(r.helps());
  EXPECT_EQ(r.none->reason, NoVictimReason::kEvenAllVictimsTooFew);
}

// Seeded random clusters: every accepted set is lower-tier only, really makes the plan
// fit, and is minimal (dropping any one victim breaks the fit).
TEST(PreemptionTest, RandomClustersGiveValidMinimalSets) {
  std::mt19937 rng(3);
  int helped = 0;
  for (int round = 0; round < 150; ++round) {
    ClusterState s(StandardLevels());
    const int nodes = 2 + static_cast<int>(rng() % 8);
    for (int i = 0; i < nodes; ++i) {
      ASSERT_TRUE(s.AddNode(MakeNode(Numbered("n", i)).NvSwitch().Rack(Numbered("r", i % 2)).Pool("H100").Build())
                      .ok());
    }
    // Gangs of 1-3 pods, each pod 1-8 GPUs where they fit.
    std::vector<VictimGang> victims;
    for (int gi = 0; gi < 3 * nodes; ++gi) {
      VictimGang v;
      v.key = GangKey(Numbered("ml/v", gi));
      v.priority = static_cast<int>(rng() % 3) * 100;
      v.gpu_seconds_at_risk = static_cast<double>(rng() % 1000);
      const int pods = 1 + static_cast<int>(rng() % 3);
      std::vector<PodUid> held;
      for (int p = 0; p < pods; ++p) {
        const NodeIndex n = s.Nodes()[rng() % s.Nodes().size()];
        GpuMask want = 0;
        const int k = 1 + static_cast<int>(rng() % 8);
        for (int g : GpuList(s.node(n).free)) {
          if (GpuCount(want) < k) want |= GpuMask{1} << g;
        }
        PodUid pod(Numbered(("pod-" + std::to_string(gi) + "-").c_str(), p));
        if (want && s.Allocate(pod, s.node(n).spec.name, want, v.priority).ok()) held.push_back(pod);
      }
      v.pods = Keep(std::move(held));
      if (!v.pods.empty()) victims.push_back(std::move(v));
    }
    PreemptionRequest req = Request(1 + static_cast<int>(rng() % 3), 1 + static_cast<int>(rng() % 8), 150, victims);
    if (rng() % 2) {
      req.preemptor.mode = TopologyMode::kRequired;
      req.preemptor.level = kRack;
    }
    SCOPED_TRACE(::testing::Message() << "round " << round);
    PreemptionResult r = MustChoose(s, req);
    if (!r.helps() || r.decision->victims.empty()) continue;
    ++helped;
    auto fits_without = [&](const std::vector<int>& set) {
      std::vector<PodUid> released;
      for (int i : set) {
        EXPECT_LT(victims[static_cast<size_t>(i)].priority, 150);
        for (const PodUid& p : victims[static_cast<size_t>(i)].pods) released.push_back(p);
      }
      PlanOptions o;
      o.assume_released = released;
      Result<GangPlanResult> plan = PlanGang(s, req.preemptor, o);
      EXPECT_TRUE(plan.ok()) << plan.status();
      return plan.ok() && plan->fits();
    };
    EXPECT_TRUE(fits_without(r.decision->victims));
    for (size_t drop = 0; drop < r.decision->victims.size(); ++drop) {
      std::vector<int> fewer = r.decision->victims;
      fewer.erase(fewer.begin() + static_cast<std::ptrdiff_t>(drop));
      EXPECT_FALSE(fits_without(fewer)) << "victim " << r.decision->victims[drop] << " was unnecessary";
    }
  }
  EXPECT_GT(helped, 20);  // the generator really exercises preemption
}

}  // namespace
}  // namespace phalanx::placement
