#include "operator/reconcile/desired_state.h"

#include <gtest/gtest.h>

#include "tests/unit/operator/test_builders.h"

namespace phalanx::op {
namespace {

std::string Env(const json::Json& container, const std::string& name) {
  for (const auto& e : container["env"]) {
    if (e["name"] == name) return e["value"].get<std::string>();
  }
  return "<missing>";
}

TEST(DesiredStateTest, PodCarriesGangKeysGatesOwnersAndEnv) {
  TrainingJob job = testing::DecodeOrDie(testing::ValidJobJson(4, 8));
  PodOptions options;
  options.progress_url = "https://phalanx-operator.phalanx-system.svc:8443/progress";
  json::Json pod = BuildPod(job, AttemptContext{3, "/ckpt/step-900", "PreemptionByScheduler"}, 2, options);
  const json::Json& meta = pod["metadata"];
  EXPECT_EQ(meta["name"], "llama-a3-2");
  EXPECT_EQ(meta["namespace"], "ml");
  EXPECT_EQ(meta["labels"]["phalanx.io/gang"], "llama-a3");
  EXPECT_EQ(meta["labels"]["phalanx.io/job-name"], "llama");
  EXPECT_EQ(meta["labels"]["phalanx.io/attempt"], "3");
  EXPECT_EQ(meta["labels"]["phalanx.io/replica-index"], "2");
  EXPECT_EQ(meta["labels"]["team"], "nlp");  // template labels kept
  EXPECT_EQ(meta["annotations"]["phalanx.io/gang-min-members"], "4");
  EXPECT_EQ(meta["annotations"]["phalanx.io/gang-timeout-seconds"], "60");
  EXPECT_EQ(meta["annotations"]["phalanx.io/topology"], "phalanx.io/nvlink-domain");
  EXPECT_EQ(meta["annotations"]["phalanx.io/topology-mode"], "required");
  EXPECT_EQ(meta["finalizers"], json::Json::array({"phalanx.io/checkpoint"}));
  EXPECT_EQ(meta["ownerReferences"][0]["uid"], "uid-1");
  EXPECT_EQ(meta["ownerReferences"][0]["controller"], true);
  const json::Json& spec = pod["spec"];
  EXPECT_EQ(spec["schedulingGates"], json::Json::parse(R"([{"name":"phalanx.io/gang"}])"));
  EXPECT_EQ(spec["priorityClassName"], "phalanx-high");
  EXPECT_EQ(spec["schedulerName"], "phalanx-scheduler");
  EXPECT_EQ(spec["restartPolicy"], "Never");
  EXPECT_EQ(spec["subdomain"], "llama");
  const json::Json& c = spec["containers"][0];
  EXPECT_EQ(c["resources"]["limits"]["nvidia.com/gpu"], "8");
  EXPECT_EQ(Env(c, "FOO"), "bar");
  EXPECT_EQ(Env(c, "WORLD_SIZE"), "4");
  EXPECT_EQ(Env(c, "RANK"), "2");
  EXPECT_EQ(Env(c, "MASTER_ADDR"), "llama-a3-0.llama.ml.svc");
  EXPECT_EQ(Env(c, "MASTER_PORT"), "29500");
  EXPECT_EQ(Env(c, "PET_NNODES"), "4");
  EXPECT_EQ(Env(c, "PET_NODE_RANK"), "2");
  EXPECT_EQ(Env(c, "PET_NPROC_PER_NODE"), "8");
  EXPECT_EQ(Env(c, "PHALANX_ATTEMPT"), "3");
  EXPECT_EQ(Env(c, "PHALANX_RESTART_REASON"), "PreemptionByScheduler");
  EXPECT_EQ(Env(c, "PHALANX_RESUME_FROM"), "/ckpt/step-900");
  EXPECT_EQ(Env(c, "PHALANX_CHECKPOINT_DIR"), "/ckpt");
  EXPECT_EQ(Env(c, "PHALANX_PREEMPT_FILE"), "/etc/phalanx/preempt/notice");
  EXPECT_EQ(Env(c, "PHALANX_PROGRESS_URL"), options.progress_url);
  // Downward-API preempt file and projected token volume.
  std::string volumes = spec["volumes"].dump();
  EXPECT_NE(volumes.find("metadata.annotations['phalanx.io/preempt-notice']"), std::string::npos);
  EXPECT_NE(volumes.find("\"audience\":\"phalanx\""), std::string::npos);
}

TEST(DesiredStateTest, SchedulingQueueBecomesThePodsQueueLabelWithoutChangingTheSpecHash) {
  json::Json j = testing::ValidJobJson(4, 8);
  const TrainingJob plain = testing::DecodeOrDie(j);
  EXPECT_FALSE(BuildPod(plain, AttemptContext{1, "", ""}, 0, {})["metadata"]["labels"].contains("phalanx.io/queue"));
  j["spec"]["scheduling"]["queue"] = "team-a";
  const TrainingJob queued = testing::DecodeOrDie(j);
  EXPECT_EQ(BuildPod(queued, AttemptContext{1, "", ""}, 0, {})["metadata"]["labels"]["phalanx.io/queue"], "team-a");
  // A queue change applies from the next attempt; it does not restart running pods.
  EXPECT_EQ(SpecHash(queued.spec), SpecHash(plain.spec));
}

TEST(DesiredStateTest, NamesAreDeterministicAndHashStable) {
  TrainingJob job = testing::DecodeOrDie(testing::ValidJobJson());
  EXPECT_EQ(BuildPod(job, {1, "", ""}, 0, {}), BuildPod(job, {1, "", ""}, 0, {}));
  const std::string h = SpecHash(job.spec);
  EXPECT_EQ(h, SpecHash(testing::DecodeOrDie(testing::ValidJobJson()).spec));
  job.spec.replicas = 3;
  EXPECT_NE(h, SpecHash(job.spec));
}

TEST(DesiredStateTest, ServiceIsHeadlessAndPublishesNotReady) {
  TrainingJob job = testing::DecodeOrDie(testing::ValidJobJson());
  json::Json svc = BuildService(job, {});
  EXPECT_EQ(svc["metadata"]["name"], "llama");
  EXPECT_EQ(svc["spec"]["clusterIP"], "None");
  EXPECT_EQ(svc["spec"]["publishNotReadyAddresses"], true);
  EXPECT_EQ(svc["spec"]["selector"]["phalanx.io/job-name"], "llama");
}

}  // namespace
}  // namespace phalanx::op
