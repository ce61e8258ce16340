// Lifecycle scenarios in a tiny in-memory world (reconcile_world.h) that applies each plan, then
// reconciles again. Every step also checks idempotence: reconciling twice changes nothing more.
#include "operator/reconcile/reconcile.h"

#include <map>

#include <gtest/gtest.h>

#include "operator/api/keys.h"
#include "operator/api/time_format.h"
#include "operator/cost/usage.h"
#include "tests/unit/operator/reconcile_world.h"
#include "tests/unit/operator/test_builders.h"

namespace phalanx::op {
namespace {

using std::chrono::seconds;

using testing::World;

TEST(ReconcileTest, CreatesServiceAndGatedGang) {
  World w(testing::ValidJobJson(3, 8));
  ReconcilePlan plan = w.Step();
  ASSERT_TRUE(plan.status);
  EXPECT_EQ(plan.status->attempt, 1);
  EXPECT_EQ(plan.status->phase, Phase::kPending);
  EXPECT_TRUE(plan.create_service);
  ASSERT_EQ(plan.create_pods.size(), 3u);
  EXPECT_EQ(plan.create_pods[0]["metadata"]["name"], "llama-a1-0");
  EXPECT_EQ(plan.status->replicas, 3);
  EXPECT_EQ(plan.status->selector, "phalanx.io/job-name=llama");
  // Pods are now observed, still gated: Queued, and a second pass changes nothing.
  plan = w.Step();
  EXPECT_EQ(w.job_.status.phase, Phase::kQueued);
  EXPECT_TRUE(plan.create_pods.empty());
  EXPECT_TRUE(w.Step().empty());
  EXPECT_EQ(w.created_, 3);
}

TEST(ReconcileTest, RunningGangRefreshesCostOnATimer) {
  World w(testing::ValidJobJson(2, 8));
  w.Settle();
  w.ScheduleAndRunAll();
  w.Step();
  EXPECT_EQ(w.job_.status.phase, Phase::kRunning);
  EXPECT_EQ(w.job_.status.running_since, w.now_);
  EXPECT_EQ(w.job_.status.start_time, w.now_);
  EXPECT_DOUBLE_EQ(w.job_.status.preemption_cost.notice_seconds_needed, 60);
  ASSERT_TRUE(w.last_plan_.requeue_after);
  EXPECT_EQ(*w.last_plan_.requeue_after, seconds(30));
  w.Advance(seconds(10));
  EXPECT_TRUE(w.Step().empty());  // not stale yet: no status write
  w.Advance(seconds(20));
  ReconcilePlan p = w.Step();
  ASSERT_TRUE(p.status);
  EXPECT_DOUBLE_EQ(p.status->preemption_cost.gpu_seconds_at_risk, 30 * 16);
}

TEST(ReconcileTest, PreemptedMemberRestartsWholeGangFromCheckpointWithoutBackoff) {
  World w(testing::ValidJobJson(2, 8));
  w.Settle();
  w.ScheduleAndRunAll();
  w.Step();
  w.Advance(seconds(100));
  // Rank 1 is preempted by the scheduler; kubelet is killing it.
  w.pods_["llama-a1-1"].disruption_reason = "PreemptionByScheduler";
  w.pods_["llama-a1-1"].deletion_timestamp = w.now_;
  ReconcilePlan plan = w.Step();
  ASSERT_TRUE(plan.status);
  EXPECT_EQ(plan.status->disruptions, 1);
  EXPECT_EQ(plan.status->disruptions_by_reason.at("PreemptionByScheduler"), 1);
  EXPECT_EQ(plan.status->failures, 0);
  EXPECT_EQ(plan.status->phase, Phase::kRestarting);
  ASSERT_TRUE(plan.status->restart);
  EXPECT_FALSE(plan.status->restart->not_before);  // disruptions skip backoff
  ASSERT_EQ(plan.delete_pods.size(), 1u);         // rank 0; rank 1 is already deleting
  EXPECT_EQ(plan.delete_pods[0].name, "llama-a1-0");
  // Idempotent: the same observation does not count twice.
  w.Step();
  EXPECT_EQ(w.job_.status.disruptions, 1);
  // Both ranks save on SIGTERM; the finalizer holds the pods until the record is read.
  w.TerminateAllDeleting(R"({"step":700,"path":"/ckpt/step-700","committed":true})");
  EXPECT_EQ(w.pods_.size(), 2u);
  plan = w.Step();
  ASSERT_TRUE(plan.status);
  EXPECT_EQ(plan.status->last_committed->step, 700);
  EXPECT_EQ(plan.remove_finalizers.size(), 2u);
  EXPECT_TRUE(w.pods_.empty());
  w.Settle();
  EXPECT_EQ(w.job_.status.attempt, 2);
  EXPECT_EQ(w.job_.status.phase, Phase::kQueued);
  EXPECT_EQ(w.LivePodNames(), (std::vector<std::string>{"llama-a2-0", "llama-a2-1"}));
  EXPECT_EQ(w.EnvOf("llama-a2-0", "PHALANX_RESUME_FROM"), "/ckpt/step-700");
  EXPECT_EQ(w.EnvOf("llama-a2-0", "PHALANX_RESTART_REASON"), "PreemptionByScheduler");
  EXPECT_EQ(w.EnvOf("llama-a2-1", "PHALANX_ATTEMPT"), "2");
  ASSERT_TRUE(w.job_.status.last_restart);
  EXPECT_EQ(w.job_.status.last_restart->restart_class, RestartClass::kDisruption);
  // 16 GPUs ran 100 s; the checkpoint was written at the same second the restart was
  // decided, so no work was lost.
  EXPECT_DOUBLE_EQ(w.job_.status.lost_gpu_seconds, 0);
  EXPECT_EQ(w.job_.status.disruptions, 1);
}

TEST(ReconcileTest, FailureBacksOffThenRestarts) {
  World w(testing::ValidJobJson(2, 8));
  w.Settle();
  w.ScheduleAndRunAll();
  w.Step();
  w.Advance(seconds(50));
  w.KubeletTerminate("llama-a1-0", 1);
  ReconcilePlan plan = w.Step();
  ASSERT_TRUE(plan.status);
  EXPECT_EQ(plan.status->failures, 1);
  EXPECT_EQ(plan.status->failures_by_reason.at("Error"), 1);
  ASSERT_TRUE(plan.status->restart->not_before);
  EXPECT_EQ(*plan.status->restart->not_before, w.now_ + seconds(10));
  EXPECT_DOUBLE_EQ(plan.status->lost_gpu_seconds, 0);  // counted once the gang is gone
  w.TerminateAllDeleting();
  w.Settle();
  EXPECT_TRUE(w.pods_.empty());
  EXPECT_EQ(w.job_.status.attempt, 1);  // still backing off
  EXPECT_EQ(w.job_.status.phase, Phase::kRestarting);
  EXPECT_DOUBLE_EQ(w.job_.status.lost_gpu_seconds, 50 * 16);  // no checkpoint: all 50 s lost
  ASSERT_TRUE(w.last_plan_.requeue_after);
  EXPECT_EQ(*w.last_plan_.requeue_after, seconds(10));
  w.Advance(seconds(10));
  w.Settle();
  EXPECT_EQ(w.job_.status.attempt, 2);
  EXPECT_EQ(w.LivePodNames().size(), 2u);
  EXPECT_EQ(w.EnvOf("llama-a2-0", "PHALANX_RESTART_REASON"), "Error");
  // Second consecutive failure doubles the backoff.
  w.ScheduleAndRunAll();
  w.Step();
  w.KubeletTerminate("llama-a2-1", 2);
  plan = w.Step();
  EXPECT_EQ(*plan.status->restart->not_before, w.now_ + seconds(20));
}

TEST(ReconcileTest, MaxFailuresExceededFailsTheJobWithAReason) {
  json::Json j = testing::ValidJobJson(2, 8);
  j["spec"]["failurePolicy"]["maxFailures"] = 0;
  World w(j);
  w.Settle();
  w.ScheduleAndRunAll();
  w.Step();
  w.KubeletTerminate("llama-a1-0", 1);
  w.Step();
  EXPECT_EQ(w.job_.status.phase, Phase::kFailed);
  EXPECT_TRUE(w.job_.status.completion_time);
  const Condition* failed = nullptr;
  for (const auto& c : w.job_.status.conditions) {
    if (c.type == "Failed") failed = &c;
  }
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ(failed->reason, "MaxFailuresExceeded");
  EXPECT_NE(failed->message.find("maxFailures=0"), std::string::npos);
  // cleanPodPolicy Running: the running rank is deleted, the failed one kept for logs.
  EXPECT_EQ(w.LivePodNames(), std::vector<std::string>{"llama-a1-0"});
  w.TerminateAllDeleting();
  w.Settle();
  EXPECT_EQ(w.job_.status.phase, Phase::kFailed);
  EXPECT_EQ(w.job_.status.attempt, 1);
}

TEST(ReconcileTest, OperatorRestartMidRestartCreatesNoDuplicates) {
  World w(testing::ValidJobJson(2, 8));
  w.Settle();
  w.ScheduleAndRunAll();
  w.Step();
  w.pods_["llama-a1-0"].phase = "Unknown";  // node lost
  w.Step();
  ASSERT_EQ(w.job_.status.phase, Phase::kRestarting);
  // A new operator process: the status round-trips through JSON, nothing else survives.
  TrainingJobStatus persisted = *DecodeStatus(EncodeStatus(w.job_.status));
  w.job_.status = persisted;
  w.Step();
  EXPECT_EQ(w.job_.status.disruptions, 1);  // not counted again
  w.TerminateAllDeleting();
  // The lost node never confirms: the stuck pod is forced after the timeout.
  EXPECT_EQ(w.pods_.count("llama-a1-0"), 1u);
  w.Step();
  w.Advance(seconds(301));
  w.Settle();
  EXPECT_EQ(w.job_.status.attempt, 2);
  EXPECT_EQ(w.LivePodNames(), (std::vector<std::string>{"llama-a2-0", "llama-a2-1"}));
  EXPECT_EQ(w.created_, 4);
  EXPECT_EQ(w.job_.status.disruptions_by_reason.at("NodeLost"), 1);
}

TEST(ReconcileTest, StaleStatusNeverDeletesANewerGang) {
  World w(testing::ValidJobJson(2, 8));
  w.Settle();
  TrainingJobStatus old = w.job_.status;
  old.attempt = 0;
  w.job_.status = old;
  ReconcilePlan plan = w.Step();
  EXPECT_TRUE(plan.empty());
  EXPECT_EQ(plan.requeue_after, seconds(1));
}

TEST(ReconcileTest, GracefulPreemptionWaitsForANewerCheckpoint) {
  World w(testing::ValidJobJson(2, 8));
  w.Settle();
  w.ScheduleAndRunAll();
  w.Step();
  const std::string deadline = FormatRfc3339(w.now_ + seconds(120));
  w.Annotate(std::string(kAnnotationPreemptRequest),
             R"({"requestId":"r1","deadline":")" + deadline + R"(","reason":"tier","preemptor":"ml/big-0"})");
  ReconcilePlan plan = w.Step();
  ASSERT_TRUE(plan.status && plan.status->preemption);
  EXPECT_EQ(plan.status->preemption->state, "Signalled");
  EXPECT_EQ(plan.annotate_pods.size(), 2u);
  EXPECT_TRUE(plan.delete_pods.empty());
  EXPECT_EQ(plan.requeue_after, seconds(30));  // the cost refresh comes before the 120 s deadline
  EXPECT_NE(w.pods_["llama-a1-0"].annotations[std::string(kAnnotationPreemptNotice)].find("\"requestId\":\"r1\""),
            std::string::npos);
  EXPECT_TRUE(w.Step().empty());  // waiting
  // The workers save; the progress endpoint records it (status), then the gang drains.
  w.Advance(seconds(20));
  w.job_.status.last_committed = CheckpointRecord{900, "/ckpt/step-900", w.now_, 1};
  plan = w.Step();
  ASSERT_TRUE(plan.status);
  EXPECT_EQ(plan.status->preemption->state, "Completed");
  EXPECT_EQ(plan.status->preemption->outcome, "Checkpointed");
  EXPECT_EQ(plan.status->disruptions_by_reason.at("GracefulPreemption"), 1);
  ASSERT_EQ(plan.delete_pods.size(), 2u);
  EXPECT_TRUE(plan.delete_pods[0].mark_disruption);
  EXPECT_EQ(plan.delete_pods[0].disruption_reason, "PreemptionByScheduler");
  w.TerminateAllDeleting();
  w.Settle();
  EXPECT_EQ(w.job_.status.attempt, 2);
  EXPECT_EQ(w.EnvOf("llama-a2-0", "PHALANX_RESUME_FROM"), "/ckpt/step-900");
  // The same request id is not acted on again.
  w.ScheduleAndRunAll();
  w.Settle();
  EXPECT_EQ(w.job_.status.attempt, 2);
  EXPECT_EQ(w.job_.status.phase, Phase::kRunning);
}

TEST(ReconcileTest, GracefulPreemptionDrainsAtTheDeadline) {
  World w(testing::ValidJobJson(2, 8));
  w.Settle();
  w.ScheduleAndRunAll();
  w.Step();
  w.Annotate(std::string(kAnnotationPreemptRequest),
             R"({"requestId":"r2","deadline":")" + FormatRfc3339(w.now_ + seconds(60)) + R"("})");
  w.Step();
  w.Advance(seconds(60));
  ReconcilePlan plan = w.Step();
  ASSERT_TRUE(plan.status);
  EXPECT_EQ(plan.status->preemption->outcome, "DeadlineExceeded");
  EXPECT_EQ(plan.delete_pods.size(), 2u);
}

TEST(ReconcileTest, SuspendDeletesPodsAndResumeStartsANewAttempt) {
  World w(testing::ValidJobJson(2, 8));
  w.Settle();
  w.ScheduleAndRunAll();
  w.Step();
  w.Advance(seconds(100));
  w.SetSpec("/spec/runPolicy/suspend", true);
  w.Step();
  EXPECT_EQ(w.job_.status.phase, Phase::kSuspended);
  EXPECT_DOUBLE_EQ(w.job_.status.running_seconds, 100);
  w.TerminateAllDeleting(R"({"step":50,"path":"/ckpt/50","committed":true})");
  w.Settle();
  EXPECT_TRUE(w.pods_.empty());
  EXPECT_EQ(w.job_.status.phase, Phase::kSuspended);
  EXPECT_EQ(w.job_.status.failures + w.job_.status.disruptions, 0);  // suspend is free
  w.SetSpec("/spec/runPolicy/suspend", false);
  w.Settle();
  EXPECT_EQ(w.job_.status.attempt, 2);
  EXPECT_EQ(w.LivePodNames().size(), 2u);
  EXPECT_EQ(w.EnvOf("llama-a2-1", "PHALANX_RESUME_FROM"), "/ckpt/50");
}

TEST(ReconcileTest, ActiveDeadlineCountsRunningTimeOnly) {
  json::Json j = testing::ValidJobJson(1, 8);
  j["spec"]["runPolicy"]["activeDeadlineSeconds"] = 100;
  World w(j);
  w.Settle();
  w.Advance(seconds(1000));  // queued time does not count
  w.ScheduleAndRunAll();
  w.Step();
  EXPECT_EQ(w.job_.status.phase, Phase::kRunning);
  EXPECT_EQ(w.last_plan_.requeue_after, seconds(30));  // cost refresh comes first
  w.Advance(seconds(100));
  w.Step();
  EXPECT_EQ(w.job_.status.phase, Phase::kFailed);
  EXPECT_EQ(w.job_.status.conditions.back().reason, "DeadlineExceeded");
}

TEST(ReconcileTest, SuccessThenTtlDeletesTheJob) {
  json::Json j = testing::ValidJobJson(2, 8);
  j["spec"]["runPolicy"]["ttlSecondsAfterFinished"] = 60;
  World w(j);
  w.Settle();
  w.ScheduleAndRunAll();
  w.Step();
  w.KubeletTerminate("llama-a1-0", 0);
  w.Step();
  EXPECT_EQ(w.job_.status.phase, Phase::kRunning);  // one rank done, the other still running
  w.KubeletTerminate("llama-a1-1", 0);
  ReconcilePlan plan = w.Step();
  EXPECT_EQ(w.job_.status.phase, Phase::kSucceeded);
  EXPECT_EQ(plan.requeue_after, seconds(60));
  EXPECT_FALSE(plan.delete_job);
  EXPECT_EQ(w.pods_.size(), 2u);  // finished pods kept (cleanPodPolicy Running)
  w.Advance(seconds(60));
  EXPECT_TRUE(w.Step().delete_job);
}

TEST(ReconcileTest, InvalidSpecFailsOnceWithTheReason) {
  json::Json j = testing::ValidJobJson(2, 8);
  j["spec"]["replicas"] = 0;
  World w(j);
  ReconcilePlan plan = w.Step();
  ASSERT_TRUE(plan.status);
  EXPECT_EQ(plan.status->phase, Phase::kFailed);
  EXPECT_EQ(plan.status->conditions.back().reason, "InvalidSpec");
  EXPECT_NE(plan.status->conditions.back().message.find("spec.replicas"), std::string::npos);
  EXPECT_TRUE(plan.create_pods.empty());
  EXPECT_FALSE(plan.create_service);
  EXPECT_TRUE(w.Step().empty());  // no crash loop, no repeated writes
}

TEST(ReconcileTest, SpecChangeRebuildsTheGangWithoutCountingIt) {
  World w(testing::ValidJobJson(2, 8));
  w.Settle();
  w.ScheduleAndRunAll();
  w.Step();
  w.SetSpec("/spec/replicas", 3);
  w.Step();
  EXPECT_EQ(w.job_.status.phase, Phase::kRestarting);
  w.TerminateAllDeleting();
  w.Settle();
  EXPECT_EQ(w.job_.status.attempt, 2);
  EXPECT_EQ(w.LivePodNames().size(), 3u);
  EXPECT_EQ(w.job_.status.failures + w.job_.status.disruptions, 0);
}

TEST(ReconcileTest, OrphanPodsLoseTheirFinalizer) {
  ObservedPod p;
  p.name = "x";
  p.finalizers = {std::string(kFinalizerCheckpoint)};
  EXPECT_EQ(ReconcileOrphanPods({p}).remove_finalizers.size(), 1u);
}


// --- usage accounting (status.usage) --------------------------------------------------------

void StartClocks(World& w) {
  for (auto& [_, p] : w.pods_) {
    if (!p.start_time && p.phase == "Running") {
      p.start_time = w.now_;
      p.gpu_product = "NVIDIA-H100-80GB-HBM3";
    }
  }
}

PriceTable H100Table() {
  PriceTable t;
  t.currency = "USD";
  t.gpu_hourly["NVIDIA-H100-80GB-HBM3"] = 3.6;  // 0.001 per GPU-second
  t.default_gpu_hourly = 1;
  return t;
}

TEST(ReconcileTest, UsageRidesOnStatusWritesAndSurvivesRestartsOfTheGang) {
  World w(testing::ValidJobJson(2, 8));
  const PriceTable prices = H100Table();
  w.options_.prices = &prices;
  w.Settle();
  ASSERT_TRUE(w.job_.status.usage);
  EXPECT_EQ(w.job_.status.usage->since, w.now_);
  w.ScheduleAndRunAll();
  StartClocks(w);
  w.Step();
  w.Advance(seconds(10));
  EXPECT_TRUE(w.Step().empty());  // usage alone never makes a write before it is due
  w.Advance(seconds(20));
  ReconcilePlan p = w.Step();  // the 30 s preemption-cost refresh carries usage along
  ASSERT_TRUE(p.status);
  EXPECT_DOUBLE_EQ(p.status->usage->gpu_seconds, 16 * 30.0);
  EXPECT_NEAR(p.status->usage->cost, 16 * 30 * 0.001, 1e-12);
  EXPECT_DOUBLE_EQ(p.usage_added.gpu_seconds, 16 * 30.0);
  EXPECT_EQ(p.tier, "high");
  // Preempted at +100 s: the pods' time up to their end is persisted before their finalizers go.
  w.Advance(seconds(70));
  w.pods_["llama-a1-1"].disruption_reason = "PreemptionByScheduler";
  w.pods_["llama-a1-1"].deletion_timestamp = w.now_;
  w.Step();
  w.Advance(seconds(5));
  w.TerminateAllDeleting(R"({"step":700,"path":"/ckpt/step-700","committed":true})");
  w.Advance(seconds(60));  // the operator looks again only a minute later
  p = w.Step();
  ASSERT_TRUE(p.status);
  EXPECT_EQ(p.remove_finalizers.size(), 2u);
  EXPECT_DOUBLE_EQ(p.status->usage->gpu_seconds, 16 * 105.0);  // up to finishedAt, not to now
  w.Settle();
  EXPECT_EQ(w.job_.status.attempt, 2);
  // Attempt 2 runs 50 s and succeeds: usage keeps growing from what attempt 1 left.
  w.ScheduleAndRunAll();
  StartClocks(w);
  w.Step();
  w.Advance(seconds(50));
  for (const auto& name : w.LivePodNames()) w.KubeletTerminate(name, 0);
  w.Settle();
  EXPECT_EQ(w.job_.status.phase, Phase::kSucceeded);
  EXPECT_DOUBLE_EQ(w.job_.status.usage->gpu_seconds, 16 * 155.0);
  EXPECT_NEAR(w.job_.status.usage->cost, 16 * 155 * 0.001, 1e-12);
  // Finished: nothing is held, no more writes or wake-ups for usage.
  w.Advance(std::chrono::hours(1));
  EXPECT_TRUE(w.Step().empty());
  EXPECT_DOUBLE_EQ(w.job_.status.usage->gpu_seconds, 16 * 155.0);
}

TEST(ReconcileTest, UsageOfAPartlyRunningGangIsWrittenAtMostOncePerUpdateInterval) {
  World w(testing::ValidJobJson(2, 8));
  w.options_.usage_update = std::chrono::minutes(5);
  w.Settle();
  w.ScheduleAndRunAll();
  // Rank 1 is still starting: the job is not Running, so no preemption-cost refresh either.
  w.pods_["llama-a1-1"].phase = "Pending";
  w.pods_["llama-a1-1"].containers.clear();
  StartClocks(w);
  ReconcilePlan p = w.Step();
  ASSERT_TRUE(p.requeue_after);
  EXPECT_LE(*p.requeue_after, std::chrono::minutes(5));
  int writes = 0;
  for (int i = 0; i < 30; ++i) {  // 10 minutes of reconciles every 20 s
    w.Advance(seconds(20));
    if (w.Step().status) ++writes;
  }
  EXPECT_EQ(writes, 2);
  EXPECT_DOUBLE_EQ(w.job_.status.usage->gpu_seconds, 8 * 600.0);
}

TEST(ReconcileTest, IdleAnnotationIsWrittenAtOnceAndCountsIdleGpuHours) {
  World w(testing::ValidJobJson(2, 8));
  w.Settle();
  w.ScheduleAndRunAll();
  StartClocks(w);
  w.Step();
  w.Advance(seconds(3600));
  w.Step();
  const SystemTime idle_since = w.now_ - seconds(1800);
  w.pods_["llama-a1-0"].annotations[std::string(kAnnotationIdleSince)] = FormatRfc3339(idle_since);
  w.Advance(seconds(5));
  ReconcilePlan p = w.Step();
  ASSERT_TRUE(p.status);  // an idle period beginning is worth a write of its own
  EXPECT_DOUBLE_EQ(p.status->usage->idle_gpu_seconds, 8 * 1805.0);
  EXPECT_EQ(p.idle_gpus, 8);
  bool event = false;
  for (const auto& e : p.events) event = event || e.reason == "GpusIdle";
  EXPECT_TRUE(event);
  EXPECT_TRUE(w.Step().empty());
}

}  // namespace
}  // namespace phalanx::op
