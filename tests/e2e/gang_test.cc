// Issue 9 §2, scenarios 1 and 2: a 2 x 8-GPU TrainingJob on two DGX H100 nodes through the real
// extender, operator and device plugins; then a phalanx-critical pod preempts the whole gang,
// which resumes from its checkpoint and succeeds.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <thread>

#include "core/json/json.h"
#include "tests/e2e/drivers/time_format.h"
#include "tests/e2e/scenario_helpers.h"
#include "tests/e2e/scenario_objects.h"
#include "tests/fakes/apiserver/raw_client.h"

namespace phalanx::e2e {
namespace {

using kube::Json;
using kube::resources::kPods;
using kube::resources::kTrainingJobs;

ClusterOptions TwoDgxNodes() { return {.nodes = {{"node-a"}, {"node-b"}}}; }

Json Condition(const Json& pod, const std::string& type) {
  if (!pod.contains("status") || !pod["status"].contains("conditions")) return Json();
  for (const auto& c : pod["status"]["conditions"]) {
    if (c.value("type", "") == type) return c;
  }
  return Json();
}

// Runs a 2 x 8 job `name` until every member is Running; checks the gang invariants on the way.
void RunGang(Cluster& cluster, const JobShape& shape) {
  auto& client = cluster.client();
  const uint64_t rv0 = ListResourceVersion(client);
  ASSERT_TRUE(client.Create(kTrainingJobs, cluster.ns(), TrainingJob(shape)).ok());
  const std::string selector = "phalanx.io/job-name=" + shape.name;
  std::vector<Json> pods;
  ASSERT_TRUE(PollUntil([&] {
    pods = ListPods(client, cluster.ns(), selector);
    return pods.size() == static_cast<size_t>(shape.replicas) &&
           std::all_of(pods.begin(), pods.end(), [](const Json& p) { return Phase(p) == "Running"; });
  })) << Json(pods).dump() << cluster.Diagnostics();
  bool running = false;
  Json job = WaitJobPhase(cluster, shape.name, "Running", &running);
  ASSERT_TRUE(running) << job.dump() << cluster.Diagnostics();

  // Gates lifted together and the commit point before any Binding: every member was ungated and
  // carried phalanx.io/devices before the first member got its node.
  const auto history = PodHistory(cluster, rv0, selector);
  uint64_t last_ungated = 0, last_devices = 0, first_bound = UINT64_MAX;
  std::set<std::string> nodes;
  for (const auto& p : pods) {
    const std::string n = Name(p);
    const uint64_t ungated = FirstVersion(history, n, [](const Json& o) { return !Gated(o); });
    const uint64_t devices = FirstVersion(history, n, [](const Json& o) {
      return !Annotation(o, "phalanx.io/devices").empty();
    });
    const uint64_t bound = FirstVersion(history, n, [](const Json& o) { return !NodeName(o).empty(); });
    ASSERT_GT(ungated, 0u) << n;
    ASSERT_GT(devices, 0u) << n;
    ASSERT_GT(bound, 0u) << n;
    last_ungated = std::max(last_ungated, ungated);
    last_devices = std::max(last_devices, devices);
    first_bound = std::min(first_bound, bound);
    nodes.insert(NodeName(p));

    // The devices the extender committed are the ones kubelet allocated through the plugin.
    auto committed = json::Parse(Annotation(p, "phalanx.io/devices"));
    ASSERT_TRUE(committed.ok()) << Annotation(p, "phalanx.io/devices");
    auto allocation = cluster.kubelet_driver(NodeName(p)).AllocationOf(Key(p));
    ASSERT_TRUE(allocation) << Key(p);
    std::vector<std::string> want = (*committed)["trainer"].get<std::vector<std::string>>();
    std::vector<std::string> got = allocation->devices["trainer"];
    std::sort(want.begin(), want.end());
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, want) << Key(p);
    EXPECT_EQ(got.size(), static_cast<size_t>(shape.gpus_per_replica));
  }
  EXPECT_LT(last_ungated, first_bound);
  EXPECT_LT(last_devices, first_bound);
  EXPECT_EQ(nodes.size(), static_cast<size_t>(shape.replicas));  // 8 GPUs each: one member per node

  // The scheduler saw one planned node per member (prioritize skipped).
  for (const auto& call : cluster.scheduler()->calls()) {
    if (call.pod.find("/" + shape.name + "-a") == std::string::npos) continue;
    EXPECT_NE(call.verb, "prioritize") << call.pod;
    if (call.verb == "filter" && call.status == 200) {
      auto answer = json::Parse(call.response);
      ASSERT_TRUE(answer.ok());
      if ((*answer)["NodeNames"].is_array() && !(*answer)["NodeNames"].empty()) {
        EXPECT_EQ((*answer)["NodeNames"].size(), 1u) << call.response;
      }
    }
  }
}

void FinishAll(Cluster& cluster, const std::vector<Json>& pods) {
  for (const auto& p : pods) {
    ASSERT_TRUE(cluster.kubelet_driver(NodeName(p))
                    .Finish(Namespace(p), Name(p), 0, R"({"step":1000,"path":"/ckpt/final","committed":true})")
                    .ok());
  }
}

TEST(E2eGang, TwoByEightTrainingJobIsPlacedTogetherAndSucceeds) {
  auto cluster = StartCluster(TwoDgxNodes());
  ASSERT_TRUE(cluster);
  RunGang(*cluster, {.name = "train", .checkpoint_dir = "/ckpt/train"});
  if (HasFatalFailure()) return;
  EXPECT_GE(cluster->Metric("extender", "phalanx_extender_gangs_bound").value_or(0), 1);
  FinishAll(*cluster, ListPods(cluster->client(), "ml", "phalanx.io/job-name=train"));
  bool succeeded = false;
  Json job = WaitJobPhase(*cluster, "train", "Succeeded", &succeeded);
  EXPECT_TRUE(succeeded) << job.dump() << cluster->Diagnostics();
}

// The preemption itself: the critical pod's preempt call makes the whole gang go (every member
// DisruptionTarget, then gone), the operator records the checkpoint from the termination messages
// and creates attempt 2 resuming from it. Returns the attempt-1 preemption time.
std::chrono::system_clock::time_point PreemptGang(Cluster& cluster, Json* job_out) {
  auto& client = cluster.client();
  const auto attempt1 = ListPods(client, "ml", "phalanx.io/job-name=train");
  const uint64_t rv_before = ListResourceVersion(client);
  EXPECT_TRUE(client.Create(kPods, "ml", GpuPod("infer", 1, "phalanx-critical")).ok());

  Json job;
  EXPECT_TRUE(PollUntil([&] {
    job = GetOrNull(client, kTrainingJobs, "ml", "train");
    return job["status"].value("attempt", 0) >= 2 && job["status"].contains("checkpoint");
  })) << job.dump() << cluster.Diagnostics();
  *job_out = job;

  // The whole gang was preempted, not one member: every attempt-1 pod got DisruptionTarget and is gone.
  std::vector<std::string> names;
  for (const auto& p : attempt1) names.push_back(Name(p));
  EXPECT_TRUE(PollUntil([&] {
    return std::all_of(names.begin(), names.end(),
                       [&](const std::string& n) { return IsNotFound(client.Get(kPods, "ml", n).status()); });
  }));
  const auto history = PodHistory(cluster, rv_before, "phalanx.io/job-name=train,phalanx.io/attempt=1", names);
  std::chrono::system_clock::time_point preempted_at{};
  for (const auto& p : attempt1) {
    Json disrupted;
    for (const auto& e : history) {
      if (Name(e["object"]) == Name(p) && Condition(e["object"], "DisruptionTarget").is_object()) {
        disrupted = Condition(e["object"], "DisruptionTarget");
        break;
      }
    }
    EXPECT_TRUE(disrupted.is_object()) << Name(p) << " was never marked DisruptionTarget";
    if (!disrupted.is_object()) continue;
    const auto at = ParseRfc3339(disrupted.value("lastTransitionTime", ""));
    if (preempted_at == std::chrono::system_clock::time_point{} || at < preempted_at) preempted_at = at;
  }
  EXPECT_GE(job["status"].value("disruptions", 0), 1) << job["status"].dump();
  return preempted_at;
}

TEST(E2eGang, CriticalPodPreemptsTheWholeGangWhichRestartsFromItsCheckpoint) {
  auto cluster = StartCluster(TwoDgxNodes());
  ASSERT_TRUE(cluster);
  auto& client = cluster->client();
  // A spot gang: a standard 16-GPU gang that must wait out the critical pod's day-long default
  // run to get its GPUs back costs about what the pod gains (docs/algorithms.md §8.3).
  RunGang(*cluster, {.name = "train", .priority_class = "phalanx-spot", .checkpoint_dir = "/ckpt/train"});
  if (HasFatalFailure()) return;
  Json job;
  PreemptGang(*cluster, &job);
  if (HasFailure()) return;
  const Json last = job["status"]["checkpoint"]["lastCommitted"];
  const std::string resume = last.value("path", "");
  // The kubelet driver's termination messages: {"step":N,"path":"/ckpt/<pod>/step-N",...}.
  EXPECT_EQ(resume.rfind("/ckpt/train-a1-", 0), 0u) << last.dump();
  EXPECT_EQ(last.value("attempt", 0), 1) << last.dump();
  std::vector<Json> attempt2;
  ASSERT_TRUE(PollUntil([&] {
    attempt2 = ListPods(client, "ml", "phalanx.io/job-name=train,phalanx.io/attempt=2");
    return attempt2.size() == 2;
  })) << cluster->Diagnostics();
  for (const auto& p : attempt2) {
    EXPECT_EQ(EnvOf(p, "PHALANX_RESUME_FROM"), resume) << p.dump();
    EXPECT_EQ(EnvOf(p, "PHALANX_ATTEMPT"), "2") << p.dump();
  }
  EXPECT_GE(cluster->Metric("extender", "phalanx_extender_preemptions_accepted").value_or(0), 1);
}

// Needs the extender to keep a nominated preemptor's GPUs out of gang plans (README.md, problem 1).
TEST(E2eGang, CriticalPodRunsThenTheGangResumesAndSucceeds) {
  auto cluster = StartCluster(TwoDgxNodes());
  ASSERT_TRUE(cluster);
  auto& client = cluster->client();
  // A spot gang: a standard 16-GPU gang that must wait out the critical pod's day-long default
  // run to get its GPUs back costs about what the pod gains (docs/algorithms.md §8.3).
  RunGang(*cluster, {.name = "train", .priority_class = "phalanx-spot", .checkpoint_dir = "/ckpt/train"});
  if (HasFatalFailure()) return;
  Json job;
  const auto preempted_at = PreemptGang(*cluster, &job);
  if (HasFailure()) return;
  Json infer;
  ASSERT_TRUE(PollUntil([&] {
    infer = GetOrNull(client, kPods, "ml", "infer");
    return Phase(infer) == "Running";
  })) << infer.dump() << cluster->Diagnostics();
  // Attempt 2 waits (15 GPUs free < 16) without holding any.
  std::vector<Json> attempt2 = ListPods(client, "ml", "phalanx.io/job-name=train,phalanx.io/attempt=2");
  for (const auto& p : attempt2) EXPECT_TRUE(NodeName(p).empty()) << "attempt 2 bound while the critical pod runs";

  // Capacity returns: attempt 2 runs and the job succeeds.
  ASSERT_TRUE(cluster->kubelet_driver(NodeName(infer)).Finish("ml", "infer", 0, "").ok());
  ASSERT_TRUE(PollUntil([&] {
    attempt2 = ListPods(client, "ml", "phalanx.io/job-name=train,phalanx.io/attempt=2");
    return attempt2.size() == 2 &&
           std::all_of(attempt2.begin(), attempt2.end(), [](const Json& p) { return Phase(p) == "Running"; });
  })) << Json(attempt2).dump() << cluster->Diagnostics();
  FinishAll(*cluster, attempt2);
  bool succeeded = false;
  job = WaitJobPhase(*cluster, "train", "Succeeded", &succeeded);
  ASSERT_TRUE(succeeded) << job.dump() << cluster->Diagnostics();

  // lostGpuSeconds = replicas x gpusPerReplica x (preemption time - max(run start, last checkpoint
  // before the preemption)), from the API timestamps (second precision: +-1 s per timestamp).
  const Json last = job["status"]["checkpoint"]["lastCommitted"];
  const double lost = job["status"].value("lostGpuSeconds", -1.0);
  const auto checkpoint_at = ParseRfc3339(last.value("time", ""));
  const double expected =
      16.0 * std::max<double>(0, std::chrono::duration<double>(preempted_at - checkpoint_at).count());
  EXPECT_NEAR(lost, expected, 16.0 * 2) << job["status"].dump();
  RecordProperty("lostGpuSeconds", std::to_string(lost));
  RecordProperty("expectedLostGpuSeconds", std::to_string(expected));
}

// Non-zero lost work: rank 0 reports a committed checkpoint through the operator's progress
// endpoint (authenticated by TokenReview of its bound token), training goes on, and the workers
// write no new checkpoint when preempted. lostGpuSeconds = 16 x (preemption time - that
// checkpoint's time), and attempt 2 resumes from it.
TEST(E2eGang, PreemptionAfterAnOlderCheckpointCountsTheWorkSinceIt) {
  ClusterOptions options = TwoDgxNodes();
  options.progress_endpoint = true;
  options.termination_message = [](const Json&) { return std::string(R"({"step":0,"path":"","committed":false})"); };
  auto cluster = StartCluster(std::move(options));
  ASSERT_TRUE(cluster);
  auto& client = cluster->client();
  // A spot gang: a standard 16-GPU gang that must wait out the critical pod's day-long default
  // run to get its GPUs back costs about what the pod gains (docs/algorithms.md §8.3).
  RunGang(*cluster, {.name = "train", .priority_class = "phalanx-spot", .checkpoint_dir = "/ckpt/train"});
  if (HasFatalFailure()) return;

  auto rank0 = GetOrNull(client, kPods, "ml", "train-a1-0");
  ASSERT_TRUE(rank0.is_object()) << cluster->Diagnostics();
  fakes::apiserver::testing::RawClient api(cluster->api_url());
  const Json token = {{"token", "rank0-token"},
                      {"username", "system:serviceaccount:ml:default"},
                      {"uid", "sa-uid"},
                      {"extra", {{"authentication.kubernetes.io/pod-name", {Name(rank0)}},
                                 {"authentication.kubernetes.io/pod-uid", {rank0["metadata"].value("uid", "")}}}}};
  ASSERT_EQ(api.Post("/fake/tokens", token).status, 200);
  fakes::apiserver::testing::RawClient progress(cluster->progress_url());
  progress.set_token("rank0-token");
  const auto report = progress.Post("/progress", Json{{"step", 7}, {"path", "/ckpt/train/step-7"}, {"committed", true}});
  ASSERT_EQ(report.status, 200) << report.body << cluster->Diagnostics();
  Json job;
  ASSERT_TRUE(PollUntil([&] {
    job = GetOrNull(client, kTrainingJobs, "ml", "train");
    return job["status"]["checkpoint"]["lastCommitted"].value("step", 0) == 7;
  })) << job.dump();
  const auto checkpoint_at = ParseRfc3339(job["status"]["checkpoint"]["lastCommitted"].value("time", ""));
  // Training goes on after the checkpoint: this elapsed time is the work the preemption loses.
  std::this_thread::sleep_for(std::chrono::seconds(3));

  const auto preempted_at = PreemptGang(*cluster, &job);
  if (HasFailure()) return;
  EXPECT_EQ(job["status"]["checkpoint"]["lastCommitted"].value("step", 0), 7) << job["status"].dump();
  ASSERT_TRUE(PollUntil([&] {
    job = GetOrNull(client, kTrainingJobs, "ml", "train");
    return job["status"].value("lostGpuSeconds", 0.0) > 0;
  })) << job.dump() << cluster->Diagnostics();
  const double lost = job["status"].value("lostGpuSeconds", -1.0);
  const double expected = 16.0 * std::chrono::duration<double>(preempted_at - checkpoint_at).count();
  EXPECT_GE(expected, 16.0 * 2) << "the preemption came at least 2 s after the checkpoint";
  EXPECT_NEAR(lost, expected, 16.0 * 2) << job["status"].dump();  // timestamps have second precision
  for (const auto& p : ListPods(client, "ml", "phalanx.io/job-name=train,phalanx.io/attempt=2")) {
    EXPECT_EQ(EnvOf(p, "PHALANX_RESUME_FROM"), "/ckpt/train/step-7") << p.dump();
  }
  RecordProperty("lostGpuSeconds", std::to_string(lost));
  RecordProperty("expectedLostGpuSeconds", std::to_string(expected));
}

}  // namespace
}  // namespace phalanx::e2e
