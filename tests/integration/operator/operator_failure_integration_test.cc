// The operator's controller against the fake API server (operator_fixture.h): a failing attempt
// backs off and restarts from the last checkpoint, backoff survives an operator restart, failure
// budgets end the job, the progress endpoint authenticates pods with TokenReview, a restored
// checkpoint record is resumed from, and usage is priced per node model and never double-counted.
#include "tests/integration/operator/operator_fixture.h"

namespace phalanx::op {
namespace {

using namespace integration;  // NOLINT: the fixture and its helpers

TEST_F(OperatorIntegrationTest, FailureBacksOffThenRestartsFromTheCheckpoint) {
  Json j = JobJson("crashy", 2);
  j["spec"]["failurePolicy"] = {{"maxFailures", 3}, {"backoff", {{"initialSeconds", 2}, {"maxSeconds", 60}}}};
  ASSERT_TRUE(server_->Create(kTj, j).ok());
  ASSERT_TRUE(server_->WaitForCount("pods", "ml", "phalanx.io/job-name=crashy", 2).ok());
  RunPod("crashy-a1-0", "gpu-0");
  RunPod("crashy-a1-1", "gpu-1");
  ASSERT_TRUE(WaitJob("crashy", [](const Json& s) { return s.value("phase", "") == "Running"; }).ok());
  // Rank 1 crashes (exit 143 without DisruptionTarget: a failure) after committing step 50.
  KubeletTerminate("crashy-a1-1", R"({"step":50,"path":"/ckpt/step-50","committed":true})", /*finish_deletion=*/false);
  auto decided = WaitJob("crashy", [](const Json& s) { return s.contains("restart") && s["restart"].contains("notBefore"); });
  ASSERT_TRUE(decided.ok()) << decided.status();
  const Json& r = (*decided)["status"]["restart"];
  auto decided_at = ParseRfc3339(r.value("decidedTime", ""));
  auto not_before = ParseRfc3339(r.value("notBefore", ""));
  ASSERT_TRUE(decided_at.ok() && not_before.ok()) << r.dump();
  EXPECT_GE(SecondsBetween(*decided_at, *not_before), 2.0) << "failures back off (initialSeconds 2)";
  EXPECT_EQ((*decided)["status"]["failures"], 1);
  // The rest of the gang is drained; the kubelet finishes the deletions.
  ASSERT_TRUE(server_->WaitFor("pods", "ml", "crashy-a1-0", [](const Json& p) {
                return p["metadata"].contains("deletionTimestamp");
              }).ok());
  KubeletTerminate("crashy-a1-0", "");
  (void)server_->Delete("pods", "ml", "crashy-a1-1", fa::DeleteOptions{.grace_period_seconds = 0});
  auto pods = server_->WaitForCount("pods", "ml", "phalanx.io/attempt=2", 2, std::chrono::seconds(60));
  ASSERT_TRUE(pods.ok()) << pods.status();
  for (const Json& pod : *pods) {
    auto created = ParseRfc3339(pod["metadata"].value("creationTimestamp", ""));
    ASSERT_TRUE(created.ok());
    EXPECT_GE(*created, *not_before) << "the new gang started before the backoff ended";
    EXPECT_EQ(Env(pod, "PHALANX_RESUME_FROM"), "/ckpt/step-50");
    EXPECT_EQ(Env(pod, "PHALANX_ATTEMPT"), "2");
  }
  auto job = server_->Get(kTj, "ml", "crashy");
  ASSERT_TRUE(job.ok());
  EXPECT_EQ((*job)["status"]["failures"], 1);
  EXPECT_EQ((*job)["status"]["disruptions"], 0);
  EXPECT_EQ((*job)["status"]["lastRestart"]["class"], "Failure");
}

// The backoff is in status.restart.notBefore: an operator restart during it neither forgets it
// nor counts the failure again.
TEST_F(OperatorIntegrationTest, BackoffSurvivesAnOperatorRestart) {
  Json j = JobJson("crashy", 2);
  j["spec"]["failurePolicy"] = {{"maxFailures", 3}, {"backoff", {{"initialSeconds", 3}, {"maxSeconds", 60}}}};
  ASSERT_TRUE(server_->Create(kTj, j).ok());
  ASSERT_TRUE(server_->WaitForCount("pods", "ml", "phalanx.io/job-name=crashy", 2).ok());
  RunPod("crashy-a1-0", "gpu-0");
  RunPod("crashy-a1-1", "gpu-1");
  ASSERT_TRUE(WaitJob("crashy", [](const Json& s) { return s.value("phase", "") == "Running"; }).ok());
  KubeletTerminate("crashy-a1-0", "", /*finish_deletion=*/false);
  auto decided = WaitJob("crashy", [](const Json& s) { return s.contains("restart") && s["restart"].contains("notBefore"); });
  ASSERT_TRUE(decided.ok()) << decided.status();
  auto not_before = ParseRfc3339((*decided)["status"]["restart"].value("notBefore", ""));
  ASSERT_TRUE(not_before.ok());
  ASSERT_TRUE(server_->WaitFor("pods", "ml", "crashy-a1-1", [](const Json& p) {
                return p["metadata"].contains("deletionTimestamp");
              }).ok());
  RestartController();
  KubeletTerminate("crashy-a1-1", "");
  (void)server_->Delete("pods", "ml", "crashy-a1-0", fa::DeleteOptions{.grace_period_seconds = 0});
  auto pods = server_->WaitForCount("pods", "ml", "phalanx.io/attempt=2", 2, std::chrono::seconds(60));
  ASSERT_TRUE(pods.ok()) << pods.status();
  for (const Json& pod : *pods) {
    auto created = ParseRfc3339(pod["metadata"].value("creationTimestamp", ""));
    ASSERT_TRUE(created.ok());
    EXPECT_GE(*created, *not_before) << "the restarted operator ignored the persisted backoff";
  }
  auto job = server_->Get(kTj, "ml", "crashy");
  EXPECT_EQ((*job)["status"]["failures"], 1) << "the failure was counted again after the restart";
  EXPECT_EQ((*job)["status"]["attempt"], 2);
}

TEST_F(OperatorIntegrationTest, MaxFailuresExceededFailsTheJobWithAReason) {
  Json j = JobJson("fragile", 2);
  j["spec"]["failurePolicy"] = {{"maxFailures", 0}};
  ASSERT_TRUE(server_->Create(kTj, j).ok());
  ASSERT_TRUE(server_->WaitForCount("pods", "ml", "phalanx.io/job-name=fragile", 2).ok());
  RunPod("fragile-a1-0", "gpu-0");
  RunPod("fragile-a1-1", "gpu-1");
  ASSERT_TRUE(WaitJob("fragile", [](const Json& s) { return s.value("phase", "") == "Running"; }).ok());
  KubeletTerminate("fragile-a1-0", "", /*finish_deletion=*/false);
  auto st = WaitJob("fragile", [](const Json& s) { return s.value("phase", "") == "Failed"; });
  ASSERT_TRUE(st.ok()) << st.status();
  bool reason_found = false;
  for (const Json& c : (*st)["status"]["conditions"]) {
    if (c.value("type", "") == "Failed" && c.value("status", "") == "True") {
      EXPECT_EQ(c.value("reason", ""), "MaxFailuresExceeded");
      EXPECT_FALSE(c.value("message", "").empty());
      reason_found = true;
    }
  }
  EXPECT_TRUE(reason_found) << (*st)["status"].dump();
  EXPECT_EQ((*st)["status"]["failures"], 1);
  EXPECT_TRUE(server_->List("pods", "ml", "phalanx.io/attempt=2")->empty());
  // cleanPodPolicy Running (default): the still-running rank is deleted.
  ASSERT_TRUE(server_->WaitFor("pods", "ml", "fragile-a1-1", [](const Json& p) {
                return p["metadata"].contains("deletionTimestamp");
              }).ok());
}

TEST_F(OperatorIntegrationTest, ProgressEndpointAuthenticatesThePodAndMovesTheRecord) {
  ASSERT_TRUE(server_->Create(kTj, JobJson("llama", 2)).ok());
  ASSERT_TRUE(server_->WaitForCount("pods", "ml", "phalanx.io/job-name=llama", 2).ok());
  auto pod0 = server_->Get("pods", "ml", "llama-a1-0");
  ASSERT_TRUE(pod0.ok());
  const std::string uid = (*pod0)["metadata"]["uid"];
  auto bound = [](const std::string& pod, const std::string& pod_uid) {
    return fa::TokenUser{"system:serviceaccount:ml:default", "sa-uid", {"system:serviceaccounts"},
                         {{"authentication.kubernetes.io/pod-name", {pod}},
                          {"authentication.kubernetes.io/pod-uid", {pod_uid}}}};
  };
  server_->AddToken("rank0-token", bound("llama-a1-0", uid));
  server_->AddToken("stale-token", bound("llama-a1-0", "uid-of-an-earlier-pod"));
  server_->AddToken("stranger-token", bound("not-a-member", "x"));
  server_->AddToken("unbound-token", fa::TokenUser{"system:serviceaccount:ml:default", "sa-uid", {}, {}});
  const uint16_t port = StartProgressEndpoint();
  const std::string report = R"({"step":1200,"path":"/ckpt/step-1200","committed":true})";
  EXPECT_EQ(HttpPost(port, "/progress", "", report), 401);
  EXPECT_EQ(HttpPost(port, "/progress", "forged-token", report), 401);
  EXPECT_EQ(HttpPost(port, "/progress", "unbound-token", report), 403);
  EXPECT_EQ(HttpPost(port, "/progress", "stale-token", report), 403);
  EXPECT_EQ(HttpPost(port, "/progress", "stranger-token", report), 404);
  EXPECT_EQ(HttpPost(port, "/progress", "rank0-token", "{not json"), 400);
  EXPECT_EQ(HttpPost(port, "/progress", "rank0-token", report), 200);
  auto st = WaitJob("llama", [](const Json& s) {
    return s.contains("checkpoint") && s["checkpoint"]["lastCommitted"].value("step", 0) == 1200;
  });
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ((*st)["status"]["checkpoint"]["lastCommitted"]["path"], "/ckpt/step-1200");
  EXPECT_TRUE((*st)["status"].contains("preemptionCost"));
  // Only forward: an older report is accepted but does not move the record back.
  EXPECT_EQ(HttpPost(port, "/progress", "rank0-token", R"({"step":900,"path":"/ckpt/step-900","committed":true})"), 200);
  EXPECT_EQ((*server_->Get(kTj, "ml", "llama"))["status"]["checkpoint"]["lastCommitted"]["step"], 1200);
  // The audience the operator asked for.
  bool audience = false;
  for (const auto& r : server_->Requests()) {
    if (r.target.find("tokenreviews") != std::string::npos) audience = audience || r.body.find("\"phalanx\"") != std::string::npos;
  }
  EXPECT_TRUE(audience) << "TokenReview without audience phalanx";
}

// docs/operations.md "Backup of TrainingJobs": created suspended, checkpoint record put back
// through the status subresource, resumed -> the first attempt resumes from it.
TEST_F(OperatorIntegrationTest, RestoredCheckpointRecordIsResumedFrom) {
  Json j = JobJson("restored", 2);
  j["spec"]["runPolicy"]["suspend"] = true;
  ASSERT_TRUE(server_->Create(kTj, j).ok());
  ASSERT_TRUE(WaitJob("restored", [](const Json& s) { return s.value("phase", "") == "Suspended"; }).ok());
  EXPECT_TRUE(server_->List("pods", "ml", "phalanx.io/job-name=restored")->empty());
  const std::string patch = R"({"status":{"checkpoint":{"lastCommitted":
      {"step":4200,"path":"/ckpt/step-4200","time":"2026-11-20T10:00:00Z","attempt":7}}}})";
  auto patched = server_->Patch(kTj, "ml", "restored", fa::PatchType::kMerge, patch, /*status=*/true);
  ASSERT_TRUE(patched.ok()) << patched.status();
  ASSERT_TRUE(server_->Patch(kTj, "ml", "restored", fa::PatchType::kMerge, R"({"spec":{"runPolicy":{"suspend":false}}})").ok());
  auto pods = server_->WaitForCount("pods", "ml", "phalanx.io/job-name=restored", 2);
  ASSERT_TRUE(pods.ok()) << pods.status();
  for (const Json& pod : *pods) EXPECT_EQ(Env(pod, "PHALANX_RESUME_FROM"), "/ckpt/step-4200");
  auto job = server_->Get(kTj, "ml", "restored");
  ASSERT_TRUE(job.ok());
  EXPECT_EQ((*job)["status"]["checkpoint"]["lastCommitted"]["step"], 4200);
  EXPECT_EQ((*job)["status"]["failures"], 0);
}


// status.usage with the real controller: priced by each pod's node model, written by the periodic
// update, and exactly the pods' held time after operator restarts (no double counting: everything
// before accountedUntil came from earlier writes and is never counted again).
TEST_F(OperatorIntegrationTest, UsageIsPricedPerNodeModelAndNeverDoubleCountedAcrossRestarts) {
  // Static: the controller (stopped only in TearDown) keeps a pointer to it.
  static const PriceTable prices{.currency = "USD",
                                 .gpu_hourly = {{"NVIDIA-H100-80GB-HBM3", 3.6}, {"NVIDIA-A100-SXM4-80GB", 1.8}},
                                 .default_gpu_hourly = 100};
  ControllerOptions opts;
  opts.reconcile.prices = &prices;
  opts.reconcile.usage_update = std::chrono::seconds(1);
  RestartController(opts);
  for (const auto& [node, model] : {std::pair{"gpu-0", "NVIDIA-H100-80GB-HBM3"}, {"gpu-1", "NVIDIA-A100-SXM4-80GB"}}) {
    ASSERT_TRUE(server_->Create("nodes", Json{{"apiVersion", "v1"}, {"kind", "Node"},
                                              {"metadata", {{"name", node}, {"labels", {{"phalanx.io/gpu.product", model}}}}}})
                    .ok());
  }
  ASSERT_TRUE(server_->Create(kTj, JobJson("usage", 2)).ok());
  ASSERT_TRUE(server_->WaitForCount("pods", "ml", "phalanx.io/job-name=usage", 2).ok());
  const std::string started = FormatRfc3339(std::chrono::system_clock::now());
  for (int i = 0; i < 2; ++i) {
    const std::string name = "usage-a1-" + std::to_string(i);
    // Bound and run, then the kubelet's startTime (its GPUs allocated at `started`), as a real
    // kubelet orders them: a pod with a startTime is on a node, so its price is the node's model.
    // (startTime first left a window, hit under ASan, where a usage write priced a pod without
    // a node at the table's default.)
    RunPod(name, "gpu-" + std::to_string(i));
    ASSERT_TRUE(server_->Patch("pods", "ml", name, fa::PatchType::kMerge,
                               Json{{"status", {{"startTime", started}}}}.dump(), /*status=*/true)
                    .ok());
  }
  ASSERT_TRUE(server_->Patch("pods", "ml", "usage-a1-1", fa::PatchType::kMerge,
                             Json{{"metadata", {{"annotations", {{"phalanx.io/idle-since", started}}}}}}.dump())
                  .ok());
  // Held time of each pod = accountedUntil - max(since, startTime); rank 1 idle all along.
  auto expect_exact = [&](const Json& u) {
    const SystemTime since = *ParseRfc3339(u.value("since", "")), until = *ParseRfc3339(u.value("accountedUntil", ""));
    const double held = SecondsBetween(std::max(since, *ParseRfc3339(started)), until);
    EXPECT_DOUBLE_EQ(u.value("gpuSeconds", -1.0), 16 * held) << u.dump();
    EXPECT_DOUBLE_EQ(u.value("idleGpuSeconds", -1.0), 8 * held) << u.dump();
    EXPECT_NEAR(u.value("cost", -1.0), 8 * held * (3.6 + 1.8) / 3600, 1e-9) << u.dump();
    EXPECT_NEAR(u.value("idleCost", -1.0), 8 * held * 1.8 / 3600, 1e-9) << u.dump();
    return held;
  };
  // Also until the idle annotation was seen: a write before the operator's watch delivered it
  // counts no idle time yet (the next one catches up from `since`), and a loaded machine can
  // delay the watch past a few 1 s writes.
  auto st = WaitJob("usage", [](const Json& s) {
    return s.contains("usage") && s["usage"].value("gpuSeconds", 0.0) >= 16 * 3 && s["usage"].contains("idlePods") &&
           s["usage"]["idlePods"].contains("usage-a1-1");
  });
  ASSERT_TRUE(st.ok()) << st.status();
  const double first = expect_exact((*st)["status"]["usage"]);
  for (int restart = 0; restart < 2; ++restart) {
    RestartController(opts);
    const double before = (*st)["status"]["usage"].value("gpuSeconds", 0.0);
    st = WaitJob("usage", [&](const Json& s) { return s["usage"].value("gpuSeconds", 0.0) >= before + 16 * 2; });
    ASSERT_TRUE(st.ok()) << st.status();
    EXPECT_GT(expect_exact((*st)["status"]["usage"]), first);
  }
  EXPECT_TRUE(EventuallyExposes("phalanx_trainingjob_idle_gpus{namespace=\"ml\",tier=\"standard\"} 8"));
}

}  // namespace
}  // namespace phalanx::op
