#include "core/placement/mig.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/placement/cluster_state.h"
#include "core/placement/mig_ledger.h"
#include "core/placement/node_score.h"
#include "core/placement/topology_bandwidth.h"
#include "core/topology/reference_machines.h"

namespace phalanx::placement {
namespace {

using ::testing::ElementsAre;

MigSlice Slice(int gpu, std::string profile, std::string id) {
  return MigSlice{.gpu = gpu,
                  .profile = profile,
                  .compute_slices = MigComputeSlices(profile).value(),
                  .device_id = std::move(id),
                  .healthy = true};
}

// GPU 0: 7 x 1g.10gb. GPU 1: 3g.40gb + 2g.20gb + 2 x 1g.10gb (the a100-mig machine).
std::vector<MigSlice> A100Mig() {
  std::vector<MigSlice> s;
  for (int i = 0; i < 7; ++i) s.push_back(Slice(0, "1g.10gb", "MIG-a" + std::to_string(i)));
  s.push_back(Slice(1, "3g.40gb", "MIG-b0"));
  s.push_back(Slice(1, "2g.20gb", "MIG-b1"));
  s.push_back(Slice(1, "1g.10gb", "MIG-b2"));
  s.push_back(Slice(1, "1g.10gb", "MIG-b3"));
  return s;
}

TEST(MigNamesTest, ResourcesAndProfiles) {
  EXPECT_EQ(MigResourceName("1g.10gb"), "nvidia.com/mig-1g.10gb");
  EXPECT_EQ(MigProfileOf("nvidia.com/mig-3g.40gb"), "3g.40gb");
  EXPECT_EQ(MigProfileOf("nvidia.com/gpu"), std::nullopt);
  EXPECT_EQ(MigProfileOf("nvidia.com/mig-"), std::nullopt);
  EXPECT_EQ(MigProfileOf("nvidia.com/mig-banana"), std::nullopt);
  EXPECT_EQ(MigComputeSlices("7g.80gb"), 7);
  EXPECT_EQ(MigComputeSlices("1c.3g.40gb"), 1);
  EXPECT_EQ(MigComputeSlices("1g.10gb+me"), 1);
  EXPECT_EQ(MigComputeSlices("8g.80gb"), std::nullopt);
  EXPECT_EQ(MigComputeSlices("gpu"), std::nullopt);
}

TEST(MigFitTest, ReasonsSeparateGeometryFromUse) {
  MigNode node(A100Mig());
  EXPECT_TRUE(CheckMigFit(node, {"1g.10gb", 9}).fits());
  MigFeasibility none = CheckMigFit(node, {"4g.40gb", 1});
  EXPECT_EQ(none.reason, MigUnfitReason::kNoSuchProfile);
  EXPECT_TRUE(none.unresolvable());
  EXPECT_EQ(none.Message(), "Insufficient nvidia.com/mig-4g.40gb: node's MIG layout has no 4g.40gb device");
  EXPECT_EQ(CheckMigFit(node, {"3g.40gb", 2}).reason, MigUnfitReason::kTooFewDevices);
  EXPECT_EQ(CheckMigFit(MigNode(), {"1g.10gb", 1}).reason, MigUnfitReason::kNoMig);
  ASSERT_TRUE(node.Take({7}, PodUid("p")));
  MigFeasibility used = CheckMigFit(node, {"3g.40gb", 1});
  EXPECT_EQ(used.reason, MigUnfitReason::kInUse);
  EXPECT_FALSE(used.unresolvable());
  EXPECT_EQ(used.Message(), "Insufficient nvidia.com/mig-3g.40gb: requested 1, 0 free of 1 (the rest held by pods)");
}

TEST(MigFitTest, UnhealthyParentIsUnresolvable) {
  auto slices = A100Mig();
  for (auto& s : slices)
    if (s.gpu == 1) s.healthy = false;
  MigFeasibility f = CheckMigFit(MigNode(slices), {"2g.20gb", 1});
  EXPECT_EQ(f.reason, MigUnfitReason::kUnhealthy);
  EXPECT_TRUE(f.unresolvable());
}

TEST(MigChoiceTest, PacksOntoThePartlyUsedGpu) {
  MigNode node(A100Mig());
  // Both GPUs are untouched: GPU 1 has fewer free compute slices (7 vs 7 -> tie: 3+2+1+1=7),
  // so the tie goes to GPU 0.
  auto first = ChooseMigDevices(node, {"1g.10gb", 1});
  ASSERT_TRUE(first);
  EXPECT_THAT(first->devices, ElementsAre(0));
  // Once GPU 1's 3g device is in use, 1g requests go to GPU 1 (4 free) before GPU 0 (7 free).
  ASSERT_TRUE(node.Take({7}, PodUid("big")));
  auto packed = ChooseMigDevices(node, {"1g.10gb", 2});
  ASSERT_TRUE(packed);
  EXPECT_THAT(packed->devices, ElementsAre(9, 10));
  // A third 1g spills to GPU 0 only after GPU 1's are gone.
  auto three = ChooseMigDevices(node, {"1g.10gb", 3});
  ASSERT_TRUE(three);
  EXPECT_THAT(three->devices, ElementsAre(0, 9, 10));
}

TEST(MigChoiceTest, NeverBreaksAnIdleGpuWhenAUsedOneFits) {
  // Two GPUs of 7 x 1g; GPU 1 has one device in use.
  std::vector<MigSlice> slices;
  for (int g = 0; g < 2; ++g)
    for (int i = 0; i < 7; ++i) slices.push_back(Slice(g, "1g.10gb", fmt::format("MIG-{}-{}", g, i)));
  MigNode node(slices);
  ASSERT_TRUE(node.Take({7}, PodUid("p")));
  for (int count = 1; count <= 6; ++count) {
    auto c = ChooseMigDevices(node, {"1g.10gb", count});
    ASSERT_TRUE(c);
    for (int d : c->devices) EXPECT_EQ(node.slices()[static_cast<size_t>(d)].gpu, 1) << "count " << count;
  }
}

TEST(MigChoiceTest, ScoreRewardsFullerNodes) {
  MigNode empty(A100Mig());
  MigNode busy(A100Mig());
  ASSERT_TRUE(busy.Take({0, 1, 2, 3}, PodUid("p")));
  auto a = ChooseMigDevices(empty, {"1g.10gb", 1});
  auto b = ChooseMigDevices(busy, {"1g.10gb", 1});
  ASSERT_TRUE(a && b);
  EXPECT_GT(b->score, a->score);
  EXPECT_GE(a->score, 0);
  EXPECT_LE(b->score, 10);
  EXPECT_FALSE(ChooseMigDevices(busy, {"4g.40gb", 1}));
}

TEST(MigLedgerTest, AllocateReleaseAndRepublish) {
  MigLedger ledger;
  ledger.SetNode(NodeName("n1"), A100Mig());
  EXPECT_EQ(ledger.TotalCompute(), 14);
  ASSERT_TRUE(ledger.Allocate(PodUid("p"), NodeName("n1"), {7, 8}).ok());
  EXPECT_EQ(ledger.UsedCompute(), 5);
  EXPECT_EQ(ledger.Allocate(PodUid("q"), NodeName("n1"), {8}).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(ledger.Allocate(PodUid("p"), NodeName("n1"), {0}).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(ledger.Allocate(PodUid("q"), NodeName("nope"), {0}).code(), StatusCode::kNotFound);
  // Republished in another order: the holding follows the device IDs.
  auto reordered = A100Mig();
  std::reverse(reordered.begin(), reordered.end());
  ledger.SetNode(NodeName("n1"), reordered);
  ASSERT_NE(ledger.FindPod(PodUid("p")), nullptr);
  EXPECT_THAT(ledger.FindPod(PodUid("p"))->devices, ElementsAre(3, 2));
  EXPECT_EQ(ledger.Find(NodeName("n1"))->holder(3), PodUid("p"));
  ASSERT_TRUE(ledger.Release(PodUid("p")).ok());
  EXPECT_EQ(ledger.UsedCompute(), 0);
  EXPECT_EQ(ledger.Release(PodUid("p")).code(), StatusCode::kNotFound);
  ledger.RemoveNode(NodeName("n1"));
  EXPECT_EQ(ledger.Find(NodeName("n1")), nullptr);
}

// Find by name through the flat index: after removals (slots reused), in copies (their
// own nodes) and after moves.
TEST(MigLedgerTest, FindByNameSurvivesChurnCopiesAndMoves) {
  MigLedger ledger;
  for (int i = 0; i < 40; ++i) ledger.SetNode(NodeName("n" + std::to_string(i)), A100Mig());
  for (int i = 0; i < 40; i += 2) ledger.RemoveNode(NodeName("n" + std::to_string(i)));
  for (int i = 40; i < 50; ++i) ledger.SetNode(NodeName("n" + std::to_string(i)), A100Mig());
  ledger.SetNode(NodeName("n1"), {});  // an empty list removes the node too
  for (int i = 0; i < 50; ++i) {
    const std::string name = "n" + std::to_string(i);
    const bool live = i >= 40 || (i % 2 == 1 && i != 1);
    EXPECT_EQ(ledger.Find(std::string_view(name)) != nullptr, live) << name;
    EXPECT_EQ(ledger.Find(std::string_view(name)), ledger.Find(NodeName(name))) << name;
  }
  EXPECT_EQ(ledger.Find(std::string_view("n3")), &ledger.nodes().at(NodeName("n3")));
  ASSERT_TRUE(ledger.Allocate(PodUid("p"), NodeName("n3"), {0}).ok());

  MigLedger copy = ledger;
  ASSERT_NE(copy.Find(std::string_view("n3")), nullptr);
  EXPECT_NE(copy.Find(std::string_view("n3")), ledger.Find(std::string_view("n3")));
  ASSERT_TRUE(copy.Release(PodUid("p")).ok());
  EXPECT_TRUE(copy.Find(std::string_view("n3"))->IsFree(0));
  EXPECT_FALSE(ledger.Find(std::string_view("n3"))->IsFree(0));
  copy.RemoveNode(NodeName("n3"));
  EXPECT_EQ(copy.Find(std::string_view("n3")), nullptr);
  EXPECT_NE(ledger.Find(std::string_view("n3")), nullptr);

  MigLedger moved = std::move(ledger);
  ASSERT_NE(moved.Find(std::string_view("n45")), nullptr);
  EXPECT_EQ(moved.Find(std::string_view("n45")), &moved.nodes().at(NodeName("n45")));
  copy = moved;
  EXPECT_EQ(copy.Find(std::string_view("n45")), &copy.nodes().at(NodeName("n45")));
}

TEST(MigTopologyTest, A100MigMachineBecomesSlicesAndMigGpusAreNotWholeGpus) {
  const topology::NodeTopology machine = topology::MakeA100MigNode();
  const auto slices = MigSlicesFromTopology(machine);
  ASSERT_EQ(slices.size(), 11u);
  EXPECT_EQ(slices[7].profile, "3g.40gb");
  EXPECT_EQ(slices[7].compute_slices, 3);
  EXPECT_EQ(MigGpuMask(machine), GpuMask{0b11});

  ClusterState state;
  NodeSpec spec;
  spec.name = NodeName("a100");
  spec.gpu_count = 8;
  spec.healthy = AllGpus(8);
  spec.mig = MigGpuMask(machine);
  ASSERT_TRUE(state.AddNode(spec).ok());
  EXPECT_EQ(state.FreeGpus(), 6);
  EXPECT_EQ(state.TotalGpus(), 6);
  const NodeIndex n = *state.FindNode(NodeName("a100"));
  EXPECT_EQ(state.node(n).free, GpuMask{0b11111100});
  EXPECT_EQ(state.FreeMilli(n, 0), 0);
  Feasibility f = CheckFeasibility(state, n, PodRequest{.gpus = 7});
  EXPECT_EQ(f.reason, UnfitReason::kTooFewGpus);
  EXPECT_TRUE(state.CheckInvariantsForTest().ok());
  spec.mig = GpuMask{1} << 8;
  EXPECT_EQ(state.UpdateNode(spec).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace phalanx::placement
