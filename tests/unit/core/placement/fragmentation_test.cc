#include "core/placement/fragmentation.h"

#include <gtest/gtest.h>

#include "tests/unit/core/placement/placement_builders.h"

namespace phalanx::placement {
namespace {

using namespace ::phalanx::placement::testing;

// One node with 4 GPUs: two free, one half used, one full.
const std::vector<int> kNode = {1000, 1000, 500, 0};

TEST(FragmentationTest, NodeFragmentationPerTaskShape) {
  struct Case {
    std::string name;
    TaskShape task;
    int expected;
  };
  const std::vector<Case> cases = {
      // Fits on the two free GPUs; the half-used GPU (500) cannot host a whole GPU.
      {"one_whole_gpu", {1, 1000, 1}, 500},
      {"two_whole_gpus", {2, 1000, 1}, 500},
      // Needs 4 whole GPUs, only 2 exist: all free capacity 1000+1000+500 = 2500.
      {"four_whole_gpus", {4, 1000, 1}, 2500},
      // A 600 share fits on GPUs 0 and 1; GPU 2 (500 < 600) is stranded: 500.
      {"share_600", {1, 600, 1}, 500},
      // A 400 share fits on GPU 2 too: nothing stranded (GPU 3 has 0 free).
      {"share_400", {1, 400, 1}, 0},
      // No GPU requested: none of the free capacity is usable by it.
      {"cpu_only", {0, 0, 1}, 2500},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    EXPECT_EQ(NodeFragmentationMilli(kNode, tc.task), tc.expected);
  }
}

TEST(FragmentationTest, PopularityWeightsAreNormalised) {
  // Weights 1 and 3 -> 0.25 and 0.75: 0.25*500 + 0.75*2500 = 2000.
  const std::vector<TaskShape> mix = {{1, 1000, 1}, {4, 1000, 3}};
  EXPECT_DOUBLE_EQ(NodeFragmentationMilli(kNode, mix), 2000);
}

TEST(FragmentationTest, ClusterReportInGpusAndRatio) {
  const std::vector<std::vector<int>> nodes = {kNode, {0, 0, 0, 0}, {1000, 1000, 1000, 1000}};
  const std::vector<TaskShape> mix = {{1, 1000, 1}, {4, 1000, 1}};
  // Node 0: 0.5*500 + 0.5*2500 = 1500. Node 1: nothing free. Node 2: both fit, 0.
  // Fragmented 1.5 GPUs of 6.5 free -> ratio 1.5 / 6.5.
  FragmentationReport r = ClusterFragmentation(nodes, mix);
  EXPECT_DOUBLE_EQ(r.fragmented_gpus, 1.5);
  EXPECT_DOUBLE_EQ(r.free_gpus, 6.5);
  EXPECT_DOUBLE_EQ(r.ratio, 1.5 / 6.5);
  EXPECT_DOUBLE_EQ(ClusterFragmentation(std::vector<std::vector<int>>{{0, 0}}, mix).ratio, 0);
}

TEST(FragmentationTest, ClusterStateVariantReadsFreeMilli) {
  ClusterState s(StandardLevels());
  ASSERT_TRUE(s.AddNode(MakeNode("n").Gpus(4).NvSwitch().Build()).ok());
  ASSERT_TRUE(s.AllocateShare(PodUid("half"), NodeName("n"), 2, 500).ok());
  ASSERT_TRUE(s.Allocate(PodUid("full"), NodeName("n"), Mask({3})).ok());
  const std::vector<TaskShape> mix = {{1, 1000, 1}, {4, 1000, 1}};
  FragmentationReport r = ClusterFragmentation(s, mix);
  EXPECT_DOUBLE_EQ(r.fragmented_gpus, 1.5);
  EXPECT_DOUBLE_EQ(r.free_gpus, 2.5);
}

TEST(FragmentationTest, DeltaRewardsFillingTheHalfUsedGpu) {
  const std::vector<TaskShape> mix = {{1, 1000, 1}};
  // A 500 share on GPU 2 fills it: fragmentation 500 -> 0.
  EXPECT_DOUBLE_EQ(FragmentationDelta(kNode, Mask({2}), {1, 500, 1}, mix), -500);
  // The same share on GPU 0 leaves two half GPUs: 500 -> 1000.
  EXPECT_DOUBLE_EQ(FragmentationDelta(kNode, Mask({0}), {1, 500, 1}, mix), 500);
}

}  // namespace
}  // namespace phalanx::placement
