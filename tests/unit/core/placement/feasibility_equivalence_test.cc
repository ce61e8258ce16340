// CheckFeasibility reads the node's holder tiers instead of walking its pods; it must give
// exactly the answers the walk gave (feasibility_reference.h), reason and numbers alike,
// after any sequence of holdings changes. Random small clusters with several tiers,
// shares, reservations, unhealthy and MIG GPUs, cordons and node churn.
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/placement/node_score.h"
#include "tests/unit/core/placement/feasibility_reference.h"

namespace phalanx::placement {
namespace {

constexpr int kPriorities[] = {-10, 0, 0, 5, 100};
const char* const kPools[] = {"A100", "H100", ""};

class RandomCluster {
 public:
  explicit RandomCluster(uint32_t seed) : rng_(seed) {
    for (int i = 0; i < 10; ++i) (void)state_.AddNode(RandomSpec(NodeName("n" + std::to_string(i))));
  }

  void Step() {
    switch (rng_() % 10) {
      case 0:
      case 1:
      case 2: {  // whole GPUs
        const NodeIndex n = AnyNode();
        const PodUid pod("p" + std::to_string(next_++));
        if (state_.Allocate(pod, state_.node(n).spec.name, RandomMask(n), Priority()).ok()) pods_.push_back(pod);
        break;
      }
      case 3:
      case 4: {  // a share
        const NodeIndex n = AnyNode();
        const int gpus = state_.node(n).spec.gpu_count;
        if (gpus == 0) break;
        const PodUid pod("p" + std::to_string(next_++));
        const int milli = 1 + static_cast<int>(rng_() % (kMilliPerGpu - 1));
        if (state_.AllocateShare(pod, state_.node(n).spec.name, static_cast<int>(rng_() % static_cast<uint32_t>(gpus)),
                                 milli, Priority())
                .ok()) {
          pods_.push_back(pod);
        }
        break;
      }
      case 5:
      case 6:  // release
        if (!pods_.empty()) {
          const size_t k = rng_() % pods_.size();
          (void)state_.Release(pods_[k]);
          pods_.erase(pods_.begin() + static_cast<std::ptrdiff_t>(k));
        }
        break;
      case 7: {  // a plan of one or two members; sometimes a member is committed at once
        const GangKey plan("ns/g" + std::to_string(next_++));
        std::vector<MemberPlacement> members;
        for (int m = 0; m < 1 + static_cast<int>(rng_() % 2); ++m) {
          const NodeIndex n = AnyNode();
          members.push_back({state_.node(n).spec.name, RandomMask(n) & state_.node(n).free, 0});
        }
        if (!state_.Reserve(plan, members).ok()) break;
        plans_.push_back(plan);
        if (rng_() % 2) {
          const PodUid pod("p" + std::to_string(next_++));
          if (state_.Commit(plan, 0, pod, Priority()).ok()) pods_.push_back(pod);
        }
        break;
      }
      case 8:  // health, MIG mode or cordon changes; holdings stay
        (void)state_.UpdateNode(RandomSpec(state_.node(AnyNode()).spec.name, state_.node(AnyNode()).spec.gpu_count));
        break;
      case 9: {  // node churn: its pods and the plans that used it go
        const NodeName name = state_.node(AnyNode()).spec.name;
        auto removal = state_.RemoveNode(name);
        ASSERT_TRUE(removal.ok());
        std::erase_if(pods_, [&](const PodUid& p) { return state_.FindPod(p) == nullptr; });
        (void)state_.AddNode(RandomSpec(name));
        break;
      }
    }
  }

  // A request of any kind: whole GPUs or a share, any pool or one, any tier, sometimes
  // as a member of a live plan.
  PodRequest RandomRequest() {
    PodRequest r;
    r.gpus = 1 + static_cast<int>(rng_() % 9);
    if (rng_() % 4 == 0) r.milli = 1 + static_cast<int>(rng_() % kMilliPerGpu);
    if (rng_() % 3 == 0) r.pool = kPools[rng_() % 3];
    r.priority = Priority();
    if (!plans_.empty() && rng_() % 3 == 0) r.own_plan = plans_[rng_() % plans_.size()];
    return r;
  }

  const ClusterState& state() const { return state_; }

 private:
  NodeSpec RandomSpec(const NodeName& name, int gpu_count = -1) {
    NodeSpec s;
    s.name = name;
    s.gpu_count = gpu_count >= 0 ? gpu_count : static_cast<int>(rng_() % 9);
    s.pool = kPools[rng_() % 3];
    const GpuMask all = AllGpus(s.gpu_count);
    s.healthy = rng_() % 3 == 0 ? all & rng_() : all;
    s.mig = rng_() % 5 == 0 ? all & rng_() : 0;
    s.schedulable = rng_() % 8 != 0;
    return s;
  }
  NodeIndex AnyNode() { return state_.Nodes()[rng_() % state_.Nodes().size()]; }
  GpuMask RandomMask(NodeIndex n) {
    const GpuMask all = AllGpus(state_.node(n).spec.gpu_count);
    return all & (rng_() % 2 ? static_cast<GpuMask>(rng_()) : (GpuMask{1} << (rng_() % 8)));
  }
  int Priority() { return kPriorities[rng_() % std::size(kPriorities)]; }

  std::mt19937 rng_;
  ClusterState state_;
  std::vector<PodUid> pods_;
  std::vector<GangKey> plans_;
  int next_ = 0;
};

TEST(FeasibilityEquivalenceTest, TiersGiveTheAnswersOfThePodWalk) {
  int compared = 0, lower = 0, higher = 0;
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    RandomCluster c(seed);
    for (int step = 0; step < 300; ++step) {
      c.Step();
      ASSERT_TRUE(c.state().CheckInvariantsForTest().ok()) << "seed " << seed << " step " << step;
      for (int q = 0; q < 4; ++q) {
        const PodRequest r = c.RandomRequest();
        for (NodeIndex n : c.state().Nodes()) {
          const Feasibility want = reference::ReferenceCheckFeasibility(c.state(), n, r);
          const Feasibility got = CheckFeasibility(c.state(), n, r);
          const auto where = ::testing::Message() << "seed " << seed << " step " << step << " node "
                                                  << c.state().node(n).spec.name.str() << " want \""
                                                  << FormatFeasibility(want) << "\"";
          ASSERT_EQ(got.reason, want.reason) << where;
          ASSERT_EQ(got.requested, want.requested) << where;
          ASSERT_EQ(got.free, want.free) << where;
          ASSERT_EQ(got.preemptible, want.preemptible) << where;
          ASSERT_EQ(got.reserved, want.reserved) << where;
          ASSERT_EQ(got.healthy, want.healthy) << where;
          ASSERT_EQ(got.capacity, want.capacity) << where;
          ASSERT_EQ(got.node_pool, want.node_pool) << where;
          ASSERT_EQ(FormatFeasibility(got), FormatFeasibility(want)) << where;
          ++compared;
          lower += want.reason == UnfitReason::kInUseByLowerTiers;
          higher += want.reason == UnfitReason::kInUseByHigherTiers;
        }
      }
    }
  }
  // The random clusters must reach the interesting cases, or the check proves little.
  EXPECT_GT(compared, 100000);
  EXPECT_GT(lower, 1000);
  EXPECT_GT(higher, 1000);
}

}  // namespace
}  // namespace phalanx::placement
