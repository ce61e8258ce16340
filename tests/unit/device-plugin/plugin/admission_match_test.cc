// AdmissionMatcher: which pending pod and container a kubelet call is for, and its plan.
#include "device-plugin/plugin/admission_match.h"

#include <gtest/gtest.h>

#include "core/placement/topology_bandwidth.h"
#include "core/topology/reference_machines.h"
#include "tests/unit/device-plugin/plugin/test_resources.h"

namespace phalanx::device_plugin {
namespace {

class MatcherTest : public ::testing::Test {
 protected:
  topology::NodeTopology node_ = topology::MakeNvlinkPairsNode(8, "NVIDIA RTX A6000", 49140, 4);
  ResourceSpec gpus_ = testing::WholeGpuResource(node_);
  std::shared_ptr<const placement::BandwidthMatrix> bw_ =
      std::make_shared<const placement::BandwidthMatrix>(placement::BandwidthFromTopology(node_));
  AdmissionMatcher matcher_{gpus_, bw_};

  std::string Gpu(int i) const { return node_.gpus[i].uuid.str(); }
  std::vector<std::string> Free(std::set<int> taken = {}) const {
    std::vector<std::string> out;
    for (int i = 0; i < 8; ++i) {
      if (!taken.count(i)) out.push_back(Gpu(i));
    }
    return out;
  }
  static PendingContainer Planned(std::string name, std::vector<std::string> plan) {
    const int n = static_cast<int>(plan.size());
    return {.name = std::move(name), .count = n, .planned = true, .plan = std::move(plan)};
  }
  static PendingPod Pod(std::string name, std::vector<PendingContainer> containers, bool annotated = true) {
    return {.key = "ml/" + name, .uid = "uid-" + name, .annotated = annotated, .containers = std::move(containers)};
  }
};

// Two pods bound in the same second: the one that arrived first is admitted first and gets its
// own plan, whatever the names (the old rule sorted by creationTimestamp, then name: a swap).
TEST_F(MatcherTest, ArrivalOrderGivesEachPodItsOwnPlan) {
  std::vector<PendingPod> pods = {Pod("rz-first", {Planned("main", {Gpu(3)})}),
                                  Pod("ra-second", {Planned("main", {Gpu(0)})})};
  auto first = matcher_.Preferred({.available = Free(), .size = 1}, pods);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->identified);
  EXPECT_EQ(first->pod, "ml/rz-first");
  EXPECT_EQ(first->choice.device_ids, std::vector<std::string>{Gpu(3)});
  EXPECT_FALSE(first->miss);
  EXPECT_FALSE(matcher_.Allocated({Gpu(3)}, pods));
  auto second = matcher_.Preferred({.available = Free({3}), .size = 1}, pods);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->pod, "ml/ra-second");
  EXPECT_EQ(second->choice.device_ids, std::vector<std::string>{Gpu(0)});
}

// One call per container, in container order; each container gets its own plan exactly.
TEST_F(MatcherTest, EachContainerGetsItsOwnPlan) {
  std::vector<PendingPod> pods = {Pod("multi", {Planned("c1", {Gpu(5)}), Planned("c2", {Gpu(2), Gpu(3)})})};
  auto c1 = matcher_.Preferred({.available = Free(), .size = 1}, pods);
  ASSERT_TRUE(c1.ok());
  EXPECT_EQ(c1->container, "c1");
  EXPECT_EQ(c1->choice.device_ids, std::vector<std::string>{Gpu(5)});
  EXPECT_FALSE(matcher_.Allocated({Gpu(5)}, pods));
  auto c2 = matcher_.Preferred({.available = Free({5}), .size = 2}, pods);
  ASSERT_TRUE(c2.ok());
  EXPECT_EQ(c2->container, "c2");
  EXPECT_EQ(c2->choice.device_ids, (std::vector<std::string>{Gpu(2), Gpu(3)}));
  EXPECT_FALSE(c2->miss);
}

// A pod without a plan admitted before planned ones gets devices nobody is planned to get.
TEST_F(MatcherTest, UnplannedPodNeverTakesAnotherPodsPlan) {
  std::vector<PendingPod> pods = {Pod("plain", {{.name = "main", .count = 2}}, /*annotated=*/false),
                                  Pod("a", {Planned("main", {Gpu(0), Gpu(1)})}),
                                  Pod("b", {Planned("main", {Gpu(2), Gpu(3)})})};
  auto plain = matcher_.Preferred({.available = Free(), .size = 2}, pods);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->pod, "ml/plain");
  EXPECT_FALSE(plain->miss);  // no plan to miss
  for (const auto& id : plain->choice.device_ids) {
    EXPECT_TRUE(id != Gpu(0) && id != Gpu(1) && id != Gpu(2) && id != Gpu(3)) << id;
  }
}

// A plan that cannot be honoured is answered by topology (off the others' plans) and reported.
TEST_F(MatcherTest, PlansThatCannotBeHonouredAreReported) {
  PendingPod gang = Pod("gang-0", {Planned("main", {Gpu(0)})});
  gang.gang = true;
  std::vector<PendingPod> pods = {gang, Pod("next", {Planned("main", {Gpu(1)})})};
  auto m = matcher_.Preferred({.available = Free({0}), .size = 1}, pods);  // GPU 0 is gone
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->pod, "ml/gang-0");
  ASSERT_TRUE(m->miss);
  EXPECT_EQ(m->miss->reason, "unavailable");
  EXPECT_TRUE(m->miss->gang);
  EXPECT_NE(m->choice.device_ids, std::vector<std::string>{Gpu(1)});  // not next's plan

  // The old extender's format: every GPU under the first container; a 1-GPU container cannot
  // take a 2-GPU plan, and the second container has none.
  AdmissionMatcher fresh(gpus_, bw_);
  std::vector<PendingPod> old = {Pod("old", {Planned("c1", {Gpu(4), Gpu(5)}), {.name = "c2", .count = 1}})};
  old[0].containers[0].count = 1;
  auto c1 = fresh.Preferred({.available = Free(), .size = 1}, old);
  ASSERT_TRUE(c1.ok() && c1->miss);
  EXPECT_EQ(c1->miss->reason, "size");
  (void)fresh.Allocated(c1->choice.device_ids, old);
  auto c2 = fresh.Preferred({.available = Free(), .size = 1}, old);
  ASSERT_TRUE(c2.ok() && c2->miss);
  EXPECT_EQ(c2->miss->reason, "not_planned");
}

// Kubelet allocating other devices than answered (its NUMA alignment) is a miss; Allocate
// without GetPreferredAllocation serves the next container.
TEST_F(MatcherTest, AllocateChecksWhatKubeletActuallyGave) {
  std::vector<PendingPod> pods = {Pod("a", {Planned("main", {Gpu(6)})}), Pod("b", {Planned("main", {Gpu(7)})})};
  auto a = matcher_.Preferred({.available = Free(), .size = 1}, pods);
  ASSERT_TRUE(a.ok());
  auto miss = matcher_.Allocated({Gpu(2)}, pods);
  ASSERT_TRUE(miss);
  EXPECT_EQ(miss->reason, "kubelet_chose_other");
  EXPECT_EQ(miss->pod, "ml/a");
  // No GetPreferredAllocation for b: Allocate identifies it, and it got its plan.
  EXPECT_FALSE(matcher_.Allocated({Gpu(7)}, pods));
  // Both served: nothing pending is identified any more.
  auto none = matcher_.Preferred({.available = Free({2, 7}), .size = 1}, pods);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->identified);
}

// A pod whose next container asks for another number of devices is not the one being admitted.
TEST_F(MatcherTest, SizeSkipsPodsKubeletIsNotAdmitting) {
  std::vector<PendingPod> pods = {Pod("big", {Planned("main", {Gpu(0), Gpu(1), Gpu(2), Gpu(3)})}),
                                  Pod("small", {Planned("main", {Gpu(4)})})};
  auto m = matcher_.Preferred({.available = Free(), .size = 1}, pods);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->pod, "ml/small");
  EXPECT_EQ(m->choice.device_ids, std::vector<std::string>{Gpu(4)});
  // Bad requests fail as before.
  EXPECT_FALSE(matcher_.Preferred({.available = {"GPU-nope"}, .size = 1}, pods).ok());
}

}  // namespace
}  // namespace phalanx::device_plugin
