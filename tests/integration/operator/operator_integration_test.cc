// The operator's controller against the fake API server over real HTTP: gated gang creation,
// whole-gang restart after a preemption with checkpoint resume, failure backoff and budgets,
// 409 on status writes, an API server outage in the middle of a restart, the progress endpoint
// with TokenReview, restoring a backed-up checkpoint record. The test plays the extender (lifts
// gates, binds) and the kubelet (runs containers, writes termination messages, finishes
// deletions). After every test, each request the operator sent must be one that
// docs/api-requests.md lists for it (and hence one the chart's RBAC grants, tests/chart).
#include "tests/integration/operator/operator_fixture.h"

namespace phalanx::op {
namespace {

using namespace integration;  // NOLINT: the fixture and its helpers

TEST_F(OperatorIntegrationTest, CreatesGatedGangWithLabelsEnvAndOwners) {
  auto job = server_->Create(kTj, JobJson("llama", 2));
  ASSERT_TRUE(job.ok()) << job.status();
  auto pods = server_->WaitForCount("pods", "ml", "phalanx.io/job-name=llama", 2);
  ASSERT_TRUE(pods.ok()) << pods.status();
  auto pod = server_->Get("pods", "ml", "llama-a1-1");
  ASSERT_TRUE(pod.ok());
  EXPECT_EQ((*pod)["metadata"]["labels"]["phalanx.io/gang"], "llama-a1");
  EXPECT_EQ((*pod)["metadata"]["labels"]["phalanx.io/replica-index"], "1");
  EXPECT_EQ((*pod)["metadata"]["annotations"]["phalanx.io/gang-min-members"], "2");
  EXPECT_EQ((*pod)["metadata"]["ownerReferences"][0]["uid"], (*job)["metadata"]["uid"]);
  EXPECT_EQ((*pod)["metadata"]["finalizers"][0], "phalanx.io/checkpoint");
  EXPECT_EQ((*pod)["spec"]["schedulingGates"][0]["name"], "phalanx.io/gang");
  EXPECT_EQ(Env(*pod, "RANK"), "1");
  EXPECT_EQ(Env(*pod, "WORLD_SIZE"), "2");
  EXPECT_EQ(Env(*pod, "MASTER_ADDR"), "llama-a1-0.llama.ml.svc");
  EXPECT_TRUE(server_->Get("services", "ml", "llama").ok());
  auto st = WaitJob("llama", [](const Json& s) { return s.value("phase", "") == "Queued"; });
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ((*st)["status"]["attempt"], 1);
}

TEST_F(OperatorIntegrationTest, PreemptedMemberRestartsWholeGangFromCheckpoint) {
  ASSERT_TRUE(server_->Create(kTj, JobJson("llama", 2)).ok());
  ASSERT_TRUE(server_->WaitForCount("pods", "ml", "phalanx.io/job-name=llama", 2).ok());
  RunPod("llama-a1-0", "gpu-0");
  RunPod("llama-a1-1", "gpu-1");
  ASSERT_TRUE(WaitJob("llama", [](const Json& s) { return s.value("phase", "") == "Running"; }).ok());
  // The dashboard's gang wait and GPU allocation series (metrics follow the status write).
  EXPECT_TRUE(EventuallyExposes("phalanx_trainingjob_gang_wait_seconds_count 1"));
  EXPECT_TRUE(EventuallyExposes("phalanx_trainingjob_gpus{phase=\"Running\"} 16"));
  // The scheduler preempts rank 1.
  Json cond = {{"status", {{"conditions", Json::array({Json{{"type", "DisruptionTarget"}, {"status", "True"},
                                                            {"reason", "PreemptionByScheduler"}}})}}}};
  ASSERT_TRUE(server_->Patch("pods", "ml", "llama-a1-1", fa::PatchType::kStrategic, cond.dump(), true).ok());
  ASSERT_TRUE(server_->Delete("pods", "ml", "llama-a1-1").ok());
  // The operator deletes the rest of the gang.
  ASSERT_TRUE(server_->WaitFor("pods", "ml", "llama-a1-0", [](const Json& p) {
                return p["metadata"].contains("deletionTimestamp");
              }).ok());
  const std::string ck = R"({"step":700,"path":"/ckpt/step-700","committed":true})";
  KubeletTerminate("llama-a1-0", ck);
  KubeletTerminate("llama-a1-1", ck);
  auto pods = server_->WaitForCount("pods", "ml", "phalanx.io/attempt=2", 2);
  ASSERT_TRUE(pods.ok()) << pods.status();
  auto pod = server_->Get("pods", "ml", "llama-a2-0");
  ASSERT_TRUE(pod.ok());
  EXPECT_EQ(Env(*pod, "PHALANX_RESUME_FROM"), "/ckpt/step-700");
  EXPECT_EQ(Env(*pod, "PHALANX_RESTART_REASON"), "PreemptionByScheduler");
  auto job = server_->Get(kTj, "ml", "llama");
  ASSERT_TRUE(job.ok());
  const Json& s = (*job)["status"];
  EXPECT_EQ(s["attempt"], 2);
  EXPECT_EQ(s["disruptions"], 1);
  EXPECT_EQ(s["failures"], 0);
  EXPECT_FALSE(s["restart"].is_object());
  EXPECT_EQ(s["checkpoint"]["lastCommitted"]["step"], 700);
  EXPECT_FALSE(server_->Get("pods", "ml", "llama-a1-0").ok());  // finalizer released, gone
}

TEST_F(OperatorIntegrationTest, ApiServerOutageLosesNoCheckpointAndRestartsOnce) {
  ASSERT_TRUE(server_->Create(kTj, JobJson("llama", 2)).ok());
  ASSERT_TRUE(server_->WaitForCount("pods", "ml", "phalanx.io/job-name=llama", 2).ok());
  RunPod("llama-a1-0", "gpu-0");
  RunPod("llama-a1-1", "gpu-1");
  ASSERT_TRUE(WaitJob("llama", [](const Json& s) { return s.value("phase", "") == "Running"; }).ok());
  // Rank 0 crashes; the operator decides the restart and deletes rank 1.
  KubeletTerminate("llama-a1-0", R"({"step":300,"path":"/ckpt/step-300","committed":true})", /*finish_deletion=*/false);
  ASSERT_TRUE(server_->WaitFor("pods", "ml", "llama-a1-1", [](const Json& p) {
                return p["metadata"].contains("deletionTimestamp");
              }).ok());
  // The API server goes away while rank 1 saves a newer checkpoint and exits.
  server_->GoDown();
  KubeletTerminate("llama-a1-1", R"({"step":400,"path":"/ckpt/step-400","committed":true})");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // outage long enough for failed calls
  ASSERT_TRUE(server_->ComeUp().ok());
  auto pods = server_->WaitForCount("pods", "ml", "phalanx.io/attempt=2", 2);
  ASSERT_TRUE(pods.ok()) << pods.status();
  auto job = server_->Get(kTj, "ml", "llama");
  ASSERT_TRUE(job.ok());
  EXPECT_EQ((*job)["status"]["checkpoint"]["lastCommitted"]["step"], 400);  // the pod's finalizer kept it
  EXPECT_EQ((*job)["status"]["failures"], 1);
  EXPECT_EQ(Env(*server_->Get("pods", "ml", "llama-a2-1"), "PHALANX_RESUME_FROM"), "/ckpt/step-400");
}

TEST_F(OperatorIntegrationTest, OperatorRestartMidRestartCreatesNoDuplicates) {
  ASSERT_TRUE(server_->Create(kTj, JobJson("llama", 2)).ok());
  ASSERT_TRUE(server_->WaitForCount("pods", "ml", "phalanx.io/job-name=llama", 2).ok());
  RunPod("llama-a1-0", "gpu-0");
  RunPod("llama-a1-1", "gpu-1");
  ASSERT_TRUE(WaitJob("llama", [](const Json& s) { return s.value("phase", "") == "Running"; }).ok());
  Json cond = {{"status", {{"conditions", Json::array({Json{{"type", "DisruptionTarget"}, {"status", "True"},
                                                            {"reason", "EvictionByEvictionAPI"}}})}}}};
  ASSERT_TRUE(server_->Patch("pods", "ml", "llama-a1-0", fa::PatchType::kStrategic, cond.dump(), true).ok());
  ASSERT_TRUE(WaitJob("llama", [](const Json& s) { return s.value("phase", "") == "Restarting"; }).ok());
  // A new operator process takes over (nothing survives but the API objects).
  controller_->Stop();
  worker_.join();
  controller_.reset();
  ControllerOptions opts;
  opts.workers = 2;
  controller_ = std::make_unique<Controller>(*client_, opts, *metrics_,
                                             std::make_shared<spdlog::logger>("op2", std::make_shared<spdlog::sinks::null_sink_mt>()),
                                             RealClock::Instance());
  ASSERT_TRUE(controller_->StartInformers(std::chrono::seconds(20)).ok());
  worker_ = std::thread([this] { controller_->Run(); });
  for (const char* p : {"llama-a1-0", "llama-a1-1"}) {
    ASSERT_TRUE(server_->WaitFor("pods", "ml", p, [](const Json& x) { return x["metadata"].contains("deletionTimestamp"); }).ok());
    KubeletTerminate(p, "");
  }
  ASSERT_TRUE(server_->WaitForCount("pods", "ml", "phalanx.io/attempt=2", 2).ok());
  auto job = server_->Get(kTj, "ml", "llama");
  EXPECT_EQ((*job)["status"]["disruptions"], 1);
  EXPECT_EQ((*job)["status"]["attempt"], 2);
  EXPECT_EQ(server_->List("pods", "ml", "phalanx.io/job-name=llama")->size(), 2u);
}

TEST_F(OperatorIntegrationTest, GracefulPreemptionDrainsAfterANewerCheckpoint) {
  ASSERT_TRUE(server_->Create(kTj, JobJson("llama", 2)).ok());
  ASSERT_TRUE(server_->WaitForCount("pods", "ml", "phalanx.io/job-name=llama", 2).ok());
  RunPod("llama-a1-0", "gpu-0");
  RunPod("llama-a1-1", "gpu-1");
  ASSERT_TRUE(WaitJob("llama", [](const Json& s) { return s.value("phase", "") == "Running"; }).ok());
  // The extender asks for a graceful preemption with a far deadline.
  Json ann = {{"metadata", {{"annotations", {{"phalanx.io/preempt-request",
      R"({"requestId":"r1","deadline":"2099-01-01T00:00:00Z","reason":"tier","preemptor":"ml/big-0"})"}}}}}};
  ASSERT_TRUE(server_->Patch(kTj, "ml", "llama", fa::PatchType::kMerge, ann.dump()).ok());
  // Workers are notified through the pod annotation behind the downward-API preempt file.
  for (const char* p : {"llama-a1-0", "llama-a1-1"}) {
    auto pod = server_->WaitFor("pods", "ml", p, [](const Json& x) {
      return x["metadata"]["annotations"].contains("phalanx.io/preempt-notice");
    });
    ASSERT_TRUE(pod.ok()) << pod.status();
  }
  EXPECT_FALSE(server_->Get("pods", "ml", "llama-a1-0")->at("metadata").contains("deletionTimestamp"));
  // Rank 0 saves and reports it (the progress endpoint's work after TokenReview).
  auto pod0 = server_->Get("pods", "ml", "llama-a1-0");
  auto moved = controller_->ReportProgress("ml", "llama-a1-0", (*pod0)["metadata"]["uid"], {900, "/ckpt/step-900", true});
  ASSERT_TRUE(moved.ok()) << moved.status();
  EXPECT_TRUE(*moved);
  // The gang drains with DisruptionTarget and restarts from the new checkpoint.
  auto drained = server_->WaitFor("pods", "ml", "llama-a1-1", [](const Json& x) {
    return x["metadata"].contains("deletionTimestamp") && x["status"].dump().find("DisruptionTarget") != std::string::npos;
  });
  ASSERT_TRUE(drained.ok()) << drained.status();
  KubeletTerminate("llama-a1-0", "");
  KubeletTerminate("llama-a1-1", "");
  ASSERT_TRUE(server_->WaitForCount("pods", "ml", "phalanx.io/attempt=2", 2).ok());
  auto job = server_->Get(kTj, "ml", "llama");
  EXPECT_EQ((*job)["status"]["preemption"]["outcome"], "Checkpointed");
  EXPECT_EQ((*job)["status"]["disruptionsByReason"]["GracefulPreemption"], 1);
  EXPECT_EQ(Env(*server_->Get("pods", "ml", "llama-a2-0"), "PHALANX_RESUME_FROM"), "/ckpt/step-900");
}

TEST_F(OperatorIntegrationTest, SuspendAndResume) {
  ASSERT_TRUE(server_->Create(kTj, JobJson("llama", 2)).ok());
  ASSERT_TRUE(server_->WaitForCount("pods", "ml", "phalanx.io/job-name=llama", 2).ok());
  ASSERT_TRUE(server_->Patch(kTj, "ml", "llama", fa::PatchType::kMerge, R"({"spec":{"runPolicy":{"suspend":true}}})").ok());
  // Gated pods were never bound: the operator deletes them and releases its finalizer.
  ASSERT_TRUE(server_->WaitForCount("pods", "ml", "phalanx.io/job-name=llama", 0).ok());
  ASSERT_TRUE(WaitJob("llama", [](const Json& s) { return s.value("phase", "") == "Suspended"; }).ok());
  ASSERT_TRUE(server_->Patch(kTj, "ml", "llama", fa::PatchType::kMerge, R"({"spec":{"runPolicy":{"suspend":false}}})").ok());
  ASSERT_TRUE(server_->WaitForCount("pods", "ml", "phalanx.io/attempt=2", 2).ok());
  auto job = server_->Get(kTj, "ml", "llama");
  EXPECT_EQ((*job)["status"]["failures"], 0);
  EXPECT_EQ((*job)["status"]["disruptions"], 0);
}

TEST_F(OperatorIntegrationTest, FinishedJobIsDeletedAfterTtl) {
  Json j = JobJson("done", 1);
  j["spec"]["runPolicy"]["ttlSecondsAfterFinished"] = 0;
  ASSERT_TRUE(server_->Create(kTj, j).ok());
  ASSERT_TRUE(server_->WaitForCount("pods", "ml", "phalanx.io/job-name=done", 1).ok());
  RunPod("done-a1-0", "gpu-0");
  Json status = {{"status", {{"phase", "Succeeded"},
                             {"containerStatuses", Json::array({Json{{"name", "trainer"},
                                                                     {"state", {{"terminated", {{"exitCode", 0}, {"reason", "Completed"}}}}}}})}}}};
  ASSERT_TRUE(server_->Patch("pods", "ml", "done-a1-0", fa::PatchType::kMerge, status.dump(), true).ok());
  ASSERT_TRUE(server_->WaitForGone(kTj, "ml", "done").ok());
}

TEST_F(OperatorIntegrationTest, ConflictOnStatusWriteIsRetried) {
  server_->FailNext(fa::FaultRule{.verb = "update", .path_contains = "/status", .code = 409, .count = 2, .message = "injected conflict"});
  ASSERT_TRUE(server_->Create(kTj, JobJson("conflicted", 1)).ok());
  auto st = WaitJob("conflicted", [](const Json& s) { return s.value("attempt", 0) == 1; });
  ASSERT_TRUE(st.ok()) << st.status();
  auto pods = server_->WaitForCount("pods", "ml", "phalanx.io/job-name=conflicted", 1);
  ASSERT_TRUE(pods.ok()) << pods.status();
}

TEST_F(OperatorIntegrationTest, InvalidSpecEndsFailedWithTheReason) {
  Json j = JobJson("bad", 2);
  j["spec"]["checkpoint"]["flushSeconds"] = 90;  // > default grace 30; the fake does not run CEL
  ASSERT_TRUE(server_->Create(kTj, j).ok());
  auto st = WaitJob("bad", [](const Json& s) { return s.value("phase", "") == "Failed"; });
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_NE((*st)["status"].dump().find("InvalidSpec"), std::string::npos);
  EXPECT_TRUE(server_->List("pods", "ml", "phalanx.io/job-name=bad")->empty());
}

}  // namespace
}  // namespace phalanx::op
