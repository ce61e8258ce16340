#include "operator/api/training_job_codec.h"

#include <gtest/gtest.h>

#include "operator/api/time_format.h"
#include "tests/unit/operator/test_builders.h"

namespace phalanx::op {
namespace {

using testing::ValidJobJson;

TEST(TrainingJobCodecTest, DecodesEveryField) {
  auto job = DecodeTrainingJob(ValidJobJson());
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_TRUE(job->spec_error.ok()) << job->spec_error;
  EXPECT_EQ(job->meta.name, "llama");
  EXPECT_EQ(job->meta.namespace_, "ml");
  EXPECT_EQ(job->spec.replicas, 2);
  EXPECT_EQ(job->spec.gpus_per_replica, 8);
  EXPECT_EQ(job->spec.TotalGpus(), 16);
  EXPECT_EQ(job->spec.MinMembers(), 2);  // defaults to replicas
  EXPECT_EQ(job->spec.scheduling.priority_class_name, "phalanx-high");
  EXPECT_EQ(job->spec.scheduling.gang.timeout_seconds, 60);
  EXPECT_EQ(job->spec.scheduling.topology.mode, "required");
  EXPECT_EQ(job->spec.checkpoint.flush_seconds, 60);
  EXPECT_EQ(job->spec.failure_policy.max_failures, 2);
  EXPECT_EQ(job->spec.failure_policy.max_disruptions, 5);
  EXPECT_EQ(job->spec.failure_policy.backoff.max_seconds, 40);
  EXPECT_EQ(job->spec.run_policy.clean_pod_policy, CleanPodPolicy::kRunning);
}

struct BadSpecCase {
  std::string name;
  std::string json_pointer;
  json::Json value;
  std::string expected_substring;
};

TEST(TrainingJobCodecTest, InvalidSpecsReportTheField) {
  const std::vector<BadSpecCase> cases = {
      {"zero replicas", "/spec/replicas", 0, "spec.replicas: 0 is outside"},
      {"impossible gpus", "/spec/gpusPerReplica", 64, "spec.gpusPerReplica: 64 is outside"},
      {"wrong type", "/spec/replicas", "two", "spec.replicas: expected integer, got string"},
      {"unknown field", "/spec/replica", 3, "spec.replica: unknown field"},
      {"unknown nested field", "/spec/checkpoint/flushSecs", 3, "spec.checkpoint.flushSecs: unknown field"},
      {"flush beyond grace", "/spec/checkpoint/flushSeconds", 121,
       "spec.checkpoint.flushSeconds: 121 exceeds spec.template.spec.terminationGracePeriodSeconds (120)"},
      {"min members above replicas", "/spec/scheduling/gang/minMembers", 3, "minMembers: 3 is outside [1, replicas=2]"},
      {"bad topology mode", "/spec/scheduling/topology/mode", "sometimes", "topology.mode"},
      {"bad queue", "/spec/scheduling/queue", "Team_A", "spec.scheduling.queue: \"Team_A\" must be a GpuQueue name"},
      {"restart policy", "/spec/template/spec/restartPolicy", "OnFailure", "restartPolicy: must be Never"},
      {"no containers", "/spec/template/spec/containers", json::Json::array(), "at least one container"},
      {"gpu mismatch", "/spec/template/spec/containers/0/resources", json::Json{{"limits", {{"nvidia.com/gpu", "4"}}}},
       "request 4 nvidia.com/gpu in total but gpusPerReplica is 8"},
      {"backoff inverted", "/spec/failurePolicy/backoff/maxSeconds", 5, "maxSeconds: 5 is below initialSeconds (10)"},
      {"clean policy", "/spec/runPolicy/cleanPodPolicy", "Some", "cleanPodPolicy: \"Some\""},
      {"bad name", "/metadata/name", "Llama_2", "metadata.name: \"Llama_2\" must be a DNS-1035 label"},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    json::Json j = ValidJobJson();
    j[json::Json::json_pointer(tc.json_pointer)] = tc.value;
    auto job = DecodeTrainingJob(j);
    ASSERT_TRUE(job.ok()) << job.status();  // the job still decodes: it needs a Failed status
    EXPECT_EQ(job->spec_error.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(job->spec_error.message().find(tc.expected_substring), std::string::npos) << job->spec_error;
  }
}

TEST(TrainingJobCodecTest, FlushWithinDefaultGraceIsChecked) {
  json::Json j = ValidJobJson();
  j["spec"]["template"]["spec"].erase("terminationGracePeriodSeconds");
  auto job = DecodeTrainingJob(j);
  ASSERT_TRUE(job.ok());
  EXPECT_NE(job->spec_error.message().find("exceeds spec.template.spec.terminationGracePeriodSeconds (30)"),
            std::string::npos);
}

TEST(TrainingJobCodecTest, StatusRoundTrips) {
  TrainingJobStatus s;
  s.phase = Phase::kRestarting;
  s.attempt = 3;
  s.failures = 1;
  s.consecutive_failures = 1;
  s.failures_by_reason["OOMKilled"] = 1;
  s.disruptions = 2;
  s.disruptions_by_reason["PreemptionByScheduler"] = 2;
  const SystemTime t = SystemTime(std::chrono::seconds(1795000000));
  s.last_committed = CheckpointRecord{1200, "/ckpt/step-1200", t, 2};
  s.preemption_cost = PreemptionCost{1600, 100, 60, t};
  s.lost_gpu_seconds = 42.5;
  s.start_time = t;
  s.running_seconds = 30;
  s.resume_from = "/ckpt/step-1000";
  s.restart = PendingRestart{3, RestartClass::kFailure, "Error", "boom", t, t + std::chrono::seconds(10), t, std::nullopt, false};
  s.last_restart = LastRestart{RestartClass::kDisruption, "NodeLost", "", t, 1.5};
  s.preemption = PreemptionState{"r1", "Completed", "ml/big", "tier", t, t, 1000, "Checkpointed"};
  s.conditions.push_back(Condition{"Restarting", "True", "Error", "boom", t});
  const json::Json encoded = EncodeStatus(s);
  auto back = DecodeStatus(encoded);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(EncodeStatus(*back), encoded);
  EXPECT_EQ(back->restart->not_before, t + std::chrono::seconds(10));
  EXPECT_EQ(back->last_committed->path, "/ckpt/step-1200");
}

TEST(TrainingJobCodecTest, UsagePodsRoundTripAndAreChecked) {
  TrainingJobStatus s;
  const SystemTime t = SystemTime(std::chrono::seconds(1795000000));
  s.usage = UsageStatus{.gpu_seconds = 16, .since = t, .accounted_until = t};
  s.usage->pods.emplace();  // tracked, no pods yet: still written
  json::Json encoded = EncodeStatus(s);
  EXPECT_TRUE(encoded["usage"]["pods"].is_object()) << encoded.dump();
  auto back = DecodeStatus(encoded);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_TRUE(back->usage->pods.has_value());
  s.usage->pods = {{"j-a1-0", std::string(kUsagePodHolding)}, {"j-a1-1", std::string(kUsagePodReleased)}};
  back = DecodeStatus(EncodeStatus(s));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->usage, s.usage);
  // A status without it (an older operator's) decodes as untracked.
  encoded["usage"].erase("pods");
  EXPECT_FALSE(DecodeStatus(encoded)->usage->pods.has_value());
  encoded["usage"]["pods"] = {{"j-a1-0", "running"}};
  auto bad = DecodeStatus(encoded);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("status.usage.pods.j-a1-0"), std::string::npos) << bad.status();
}

TEST(TrainingJobCodecTest, UnreadableStatusIsAnError) {
  json::Json j = ValidJobJson();
  j["status"] = {{"checkpoint", {{"lastCommitted", {{"step", "many"}}}}}};
  EXPECT_EQ(DecodeTrainingJob(j).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace phalanx::op
