// The follower's decision (extender/sync/scheduler_lease_follower.h): campaign only while this pod's
// kube-scheduler holds the followed Lease; keep state when it cannot be read.
#include "extender/sync/scheduler_lease_follower.h"

#include <gtest/gtest.h>

namespace phalanx::extender {
namespace {

TEST(SchedulerLeaseFollowerTest, RecognisesKubeSchedulersIdentityOfThisPod) {
  EXPECT_TRUE(HeldByPod("phalanx-scheduler-7d9f-abcde_0f1e2d3c-aaaa-bbbb", "phalanx-scheduler-7d9f-abcde"));
  EXPECT_TRUE(HeldByPod("pod-a", "pod-a"));
  // Another pod whose name merely starts with ours is not ours.
  EXPECT_FALSE(HeldByPod("pod-ab_123", "pod-a"));
  EXPECT_FALSE(HeldByPod("pod-b_123", "pod-a"));
  EXPECT_FALSE(HeldByPod("", "pod-a"));
  EXPECT_FALSE(HeldByPod("_123", ""));
}

TEST(SchedulerLeaseFollowerTest, DecidesFromTheHolder) {
  EXPECT_EQ(DecideFollow(std::string("pod-a_1"), "pod-a"), FollowAction::kCampaign);
  EXPECT_EQ(DecideFollow(std::string("pod-b_1"), "pod-a"), FollowAction::kRelease);
  EXPECT_EQ(DecideFollow(std::string(""), "pod-a"), FollowAction::kRelease);  // unheld or no Lease
  EXPECT_EQ(DecideFollow(std::nullopt, "pod-a"), FollowAction::kKeep);        // API server away
  EXPECT_EQ(FollowActionName(FollowAction::kCampaign), "campaign");
}

TEST(SchedulerLeaseFollowerTest, ParsesTheLeaseReference) {
  std::string ns, name;
  ASSERT_TRUE(ParseLeaseRef("phalanx-system/phalanx-scheduler", &ns, &name).ok());
  EXPECT_EQ(ns, "phalanx-system");
  EXPECT_EQ(name, "phalanx-scheduler");
  for (const char* bad : {"", "x", "/x", "x/", "a/b/c"}) EXPECT_FALSE(ParseLeaseRef(bad, &ns, &name).ok()) << bad;
}

}  // namespace
}  // namespace phalanx::extender
