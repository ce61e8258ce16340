#include "operator/api/observed_pod.h"

#include <gtest/gtest.h>

namespace phalanx::op {
namespace {

TEST(ObservedPodTest, DecodesWhatTheReconcilerNeeds) {
  auto pod = DecodeObservedPod(json::Json::parse(R"({
    "metadata": {"name": "llama-a2-1", "uid": "u", "labels": {"phalanx.io/attempt": "2", "phalanx.io/replica-index": "1"},
                 "finalizers": ["phalanx.io/checkpoint"], "deletionTimestamp": "2026-11-18T09:46:40Z",
                 "annotations": {"phalanx.io/spec-hash": "abc"}},
    "spec": {"nodeName": "gpu-1", "schedulingGates": [{"name": "phalanx.io/gang"}]},
    "status": {"phase": "Failed", "reason": "Evicted",
               "conditions": [{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler", "message": "m"}],
               "containerStatuses": [{"name": "trainer", "state": {"terminated": {"exitCode": 143, "reason": "Error",
                 "message": "{\"step\":5,\"path\":\"/c/5\",\"committed\":true}", "finishedAt": "2026-11-18T09:46:41Z"}}}]}
  })"));
  ASSERT_TRUE(pod.ok()) << pod.status();
  EXPECT_EQ(pod->attempt, 2);
  EXPECT_EQ(pod->index, 1);
  EXPECT_TRUE(pod->deleting());
  EXPECT_TRUE(pod->gated);
  EXPECT_TRUE(pod->HasFinalizer("phalanx.io/checkpoint"));
  EXPECT_EQ(pod->disruption_reason, "PreemptionByScheduler");
  ASSERT_EQ(pod->containers.size(), 1u);
  EXPECT_TRUE(pod->containers[0].terminated);
  EXPECT_EQ(pod->containers[0].exit_code, 143);
  EXPECT_EQ(pod->annotations.at("phalanx.io/spec-hash"), "abc");
}

TEST(ObservedPodTest, MalformedLabelsBecomeUnknown) {
  auto pod = DecodeObservedPod(json::Json::parse(
      R"({"metadata": {"name": "x", "labels": {"phalanx.io/attempt": "two", "phalanx.io/replica-index": "-1"}}})"));
  ASSERT_TRUE(pod.ok());
  EXPECT_EQ(pod->attempt, -1);
  EXPECT_EQ(pod->index, -1);
  EXPECT_EQ(pod->phase, "Pending");
}

}  // namespace
}  // namespace phalanx::op
