#include "operator/lifecycle/restart_policy.h"

#include <gtest/gtest.h>

#include "operator/lifecycle/preempt_request.h"

namespace phalanx::op {
namespace {

using std::chrono::seconds;

TEST(RestartPolicyTest, BackoffDoublesUpToTheCap) {
  BackoffSpec b{10, 45};
  EXPECT_EQ(FailureBackoff(b, 1), seconds(10));
  EXPECT_EQ(FailureBackoff(b, 2), seconds(20));
  EXPECT_EQ(FailureBackoff(b, 3), seconds(40));
  EXPECT_EQ(FailureBackoff(b, 4), seconds(45));
  EXPECT_EQ(FailureBackoff(b, 1000), seconds(45));
}

TEST(RestartPolicyTest, BudgetsAreSeparate) {
  TrainingJobStatus st;
  FailurePolicy p;
  p.max_failures = 1;
  p.max_disruptions = 2;
  EXPECT_EQ(CountRestart(st, p, RestartClass::kDisruption, "PreemptionByScheduler"), "");
  EXPECT_EQ(CountRestart(st, p, RestartClass::kDisruption, "NodeLost"), "");
  EXPECT_EQ(CountRestart(st, p, RestartClass::kFailure, "Error"), "");
  EXPECT_EQ(st.failures, 1);
  EXPECT_EQ(st.disruptions, 2);
  EXPECT_EQ(st.disruptions_by_reason["NodeLost"], 1);
  EXPECT_EQ(CountRestart(st, p, RestartClass::kUpdate, "SpecChanged"), "");
  EXPECT_NE(CountRestart(st, p, RestartClass::kFailure, "Error").find("maxFailures=1"), std::string::npos);
  EXPECT_NE(CountRestart(st, p, RestartClass::kDisruption, "NodeLost").find("maxDisruptions=2"), std::string::npos);
}

TEST(RestartPolicyTest, LostWorkStartsAtTheLaterOfRunAndCheckpoint) {
  const SystemTime t0 = SystemTime(seconds(1000));
  // 16 GPUs ran from t0; checkpoint at t0+60; stopped at t0+100: 40 s * 16 lost.
  std::optional<CheckpointRecord> ck = CheckpointRecord{5, "/c", t0 + seconds(60), 1};
  EXPECT_DOUBLE_EQ(LostGpuSeconds(16, t0, ck, t0 + seconds(100)), 640);
  // A checkpoint from an earlier attempt: everything since this run's start is lost.
  ck->time = t0 - seconds(500);
  EXPECT_DOUBLE_EQ(LostGpuSeconds(16, t0, ck, t0 + seconds(100)), 1600);
  EXPECT_DOUBLE_EQ(LostGpuSeconds(16, std::nullopt, ck, t0), 0);  // never ran
}

TEST(RestartPolicyTest, PreemptionCost) {
  const SystemTime t0 = SystemTime(seconds(1000));
  TrainingJobSpec spec;
  spec.replicas = 2;
  spec.gpus_per_replica = 8;
  spec.checkpoint.dir = "/ckpt";
  spec.checkpoint.flush_seconds = 60;
  TrainingJobStatus st;
  EXPECT_DOUBLE_EQ(ComputePreemptionCost(spec, st, t0).gpu_seconds_at_risk, 0);  // not running
  st.running_since = t0;
  st.last_committed = CheckpointRecord{5, "/c", t0 + seconds(30), 1};
  PreemptionCost c = ComputePreemptionCost(spec, st, t0 + seconds(100));
  EXPECT_DOUBLE_EQ(c.gpu_seconds_at_risk, 70 * 16);
  EXPECT_DOUBLE_EQ(c.checkpoint_age_seconds, 70);
  EXPECT_DOUBLE_EQ(c.notice_seconds_needed, 60);
  spec.checkpoint.dir.clear();
  EXPECT_DOUBLE_EQ(ComputePreemptionCost(spec, st, t0 + seconds(100)).notice_seconds_needed, 0);
}

TEST(PreemptRequestTest, ParsesAndRejects) {
  auto r = ParsePreemptRequest(R"({"requestId":"r1","deadline":"2026-11-18T09:46:40Z","reason":"tier","preemptor":"ml/big"})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->request_id, "r1");
  EXPECT_EQ(r->preemptor, "ml/big");
  EXPECT_EQ(ParsePreemptRequest(R"({"requestId":"r1"})").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParsePreemptRequest(R"({"requestId":"r1","deadline":"soon"})").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParsePreemptRequest("not json").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace phalanx::op
