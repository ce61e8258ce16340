// Issue 17 "Done when": team queues end to end. GpuQueues are applied as `kubectl apply` would
// (the chart's CRD first, then a manifest shaped like manifests/examples/gpuqueues-two-teams.yaml);
// TrainingJobs naming a queue (spec.scheduling.queue, copied by the operator to the pods'
// phalanx.io/queue label) and hand-made gangs labelled phalanx.io/queue run through the real
// operator, extender and device plugins on two DGX H100 nodes (16 GPUs: team-a's 8 and team-b's 8).
// Team A floods and borrows team-b's idle GPUs; team B's 8-GPU job arriving later gets them back
// by the reclaim of A's borrowed gang only (evicted whole, or told to checkpoint and stop when it
// is a TrainingJob for which that is cheaper), never of A's work within its nominal quota; a team-a
// gang beyond what the cohort can lend waits, and `phalanx explain` says which queue holds it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <set>

#include <fmt/format.h>

#include "core/json/json.h"
#include "tests/e2e/scenario_helpers.h"
#include "tests/e2e/scenario_objects.h"
#include "tests/fakes/apiserver/raw_client.h"

namespace phalanx::e2e {
namespace {

using kube::Json;
using kube::resources::kPods;
using kube::resources::kTrainingJobs;

const kube::Resource kGpuQueues{"phalanx.io", "v1alpha1", "gpuqueues", false, "GpuQueue"};
constexpr const char* kPool = "NVIDIA-H100-80GB-HBM3";  // the fake DGX H100's phalanx.io/gpu.product

// As manifests/examples/gpuqueues-two-teams.yaml, sized for the 16 GPUs of two DGX H100 nodes:
// each team is guaranteed 8 and may borrow what the other does not use; work naming no queue
// runs in `shared` (nominal 0, the default queue every set needs).
constexpr const char* kTeamQueues = R"(# kubectl apply -f team-queues.yaml
apiVersion: phalanx.io/v1alpha1
kind: GpuQueue
metadata:
  name: team-a
spec:
  cohort: research
  weight: 1
  quotas:
    - {pool: NVIDIA-H100-80GB-HBM3, nominal: 8}
---
apiVersion: phalanx.io/v1alpha1
kind: GpuQueue
metadata:
  name: team-b
spec:
  cohort: research
  weight: 1
  quotas:
    - {pool: NVIDIA-H100-80GB-HBM3, nominal: 8}
---
apiVersion: phalanx.io/v1alpha1
kind: GpuQueue
metadata:
  name: shared
spec:
  cohort: research
  default: true
  quotas:
    - {pool: NVIDIA-H100-80GB-HBM3, nominal: 0}
)";

// A gated standard-tier pod of `gpus` GPUs as a user writes it; `metadata` holds its labels
// (and annotations), indented under `metadata:`.
std::string GatedPodManifest(const std::string& name, const std::string& metadata, int gpus) {
  return fmt::format(R"(---
apiVersion: v1
kind: Pod
metadata:
  name: {0}
{1}spec:
  schedulerName: phalanx-scheduler
  priorityClassName: phalanx-standard
  schedulingGates:
    - name: phalanx.io/gang
  restartPolicy: Never
  containers:
    - name: main
      image: trainer:e2e
      resources:
        limits: {{nvidia.com/gpu: "{2}"}}
        requests: {{nvidia.com/gpu: "{2}"}}
)",
                     name, metadata, gpus);
}

// A hand-made gang as a user writes it (docs/user-guide.md §2): `members` pods of `gpus` GPUs
// labelled with the gang and the queue, gated as the gang-gate webhook would gate them.
std::string GangManifest(const std::string& gang, int members, int gpus, const std::string& queue) {
  std::string out;
  for (int i = 0; i < members; ++i) {
    out += GatedPodManifest(fmt::format("{}-{}", gang, i),
                            fmt::format("  labels:\n    app: {0}\n    phalanx.io/gang: {0}\n    phalanx.io/queue: {1}\n"
                                        "  annotations:\n    phalanx.io/gang-min-members: \"{2}\"\n",
                                        gang, queue, members),
                            gpus);
  }
  return out;
}

// A single pod naming a team queue, no gang label: a gang of one inside the extender (user
// guide §7 "Pods outside gangs and ungated gangs"), gated as the webhook creates it.
std::string SinglePodManifest(const std::string& name, int gpus, const std::string& queue) {
  return GatedPodManifest(name, fmt::format("  labels:\n    phalanx.io/queue: {}\n", queue), gpus);
}

ClusterOptions TwoTeamCluster() {
  ClusterOptions o{.nodes = {{"node-a"}, {"node-b"}}};
  o.manifests = {"helm/phalanx/crds/phalanx.io_gpuqueues.yaml"};  // the chart installs its CRDs first
  o.extra_extender_args = {"--queue-status-interval", "0.2"};     // the chart's 10 s, shortened
  return o;
}

Json Queue(Cluster& cluster, const std::string& name) { return GetOrNull(cluster.client(), kGpuQueues, "", name); }

// status.pools[pool].<field> of a GpuQueue as the extender wrote it; -1 when absent.
double PoolStatus(const Json& queue, const std::string& field) {
  if (!queue.contains("status") || !queue["status"].contains("pools")) return -1;
  for (const auto& p : queue["status"]["pools"]) {
    if (p.value("pool", "") == kPool && p.contains(field) && p[field].is_number()) return p[field].get<double>();
  }
  return -1;
}

int PendingGangs(const Json& queue) {
  return queue.contains("status") ? queue["status"].value("pendingGangs", -1) : -1;
}

// GPUs held by running pods of `queue` (phalanx.io/queue label).
int64_t RunningGpus(Cluster& cluster, const std::string& queue) {
  int64_t total = 0;
  for (const auto& p : ListPods(cluster.client(), cluster.ns(), "phalanx.io/queue=" + queue)) {
    if (Phase(p) == "Running" && !Terminating(p)) total += PodGpus(p);
  }
  return total;
}

bool AllRunning(const std::vector<Json>& pods, size_t want) {
  return pods.size() == want &&
         std::all_of(pods.begin(), pods.end(), [](const Json& p) { return Phase(p) == "Running" && !Terminating(p); });
}

std::vector<Json> WaitAllRunning(Cluster& cluster, const std::string& selector, size_t want) {
  std::vector<Json> pods;
  EXPECT_TRUE(PollUntil([&] {
    pods = ListPods(cluster.client(), cluster.ns(), selector);
    return AllRunning(pods, want);
  })) << selector << ": " << Json(pods).dump() << cluster.Diagnostics();
  return pods;
}

// `phalanx explain NS/POD` against the extender, as a user runs it; "" when it failed.
std::string ExplainCli(Cluster& cluster, const std::string& pod) {
  const std::string cmd =
      BinaryPath("cli/phalanx") + " explain " + pod + " --extender " + cluster.extender_metrics_url() + " 2>&1";
  return RunCommand(cmd);
}

// "reason: text" of every Event about the object, from both Event APIs (`kubectl describe`
// shows both): events.k8s.io/v1 (regarding, note: the extender) and core/v1 (involvedObject,
// message: the operator).
std::vector<std::string> EventsAbout(Cluster& cluster, const std::string& kind, const std::string& name) {
  std::vector<std::string> out;
  if (auto listed = cluster.client().List(kube::resources::kEvents, cluster.ns()); listed.ok()) {
    for (const auto& e : (*listed)["items"]) {
      const Json& r = e.contains("regarding") ? e["regarding"] : Json::object();
      if (r.value("kind", "") == kind && r.value("name", "") == name) {
        out.push_back(e.value("reason", "") + ": " + e.value("note", ""));
      }
    }
  }
  if (auto listed = cluster.client().List(kube::resources::kCoreEvents, cluster.ns()); listed.ok()) {
    for (const auto& e : (*listed)["items"]) {
      const Json& r = e.contains("involvedObject") ? e["involvedObject"] : Json::object();
      if (r.value("kind", "") == kind && r.value("name", "") == name) {
        out.push_back(e.value("reason", "") + ": " + e.value("message", ""));
      }
    }
  }
  return out;
}

bool AnyContains(const std::vector<std::string>& texts, const std::string& a, const std::string& b = "") {
  return std::any_of(texts.begin(), texts.end(), [&](const std::string& t) {
    return t.find(a) != std::string::npos && t.find(b) != std::string::npos;
  });
}

Json ConditionOf(const Json& pod, const std::string& type) {
  if (!pod.contains("status") || !pod["status"].contains("conditions")) return Json();
  for (const auto& c : pod["status"]["conditions"]) {
    if (c.value("type", "") == type) return c;
  }
  return Json();
}

// `kubectl apply -f team-queues.yaml`, then waits until the extender has taken the queues in
// (each GpuQueue's status written by it through the status subresource: nominal 8, nothing used).
void ApplyTeamQueues(Cluster& cluster) {
  auto applied = cluster.Apply(kTeamQueues);
  ASSERT_TRUE(applied.ok()) << applied.status();
  ASSERT_EQ(applied->size(), 3u);
  Json a, b;
  ASSERT_TRUE(PollUntil([&] {
    a = Queue(cluster, "team-a");
    b = Queue(cluster, "team-b");
    return PoolStatus(a, "nominal") == 8 && PoolStatus(b, "nominal") == 8 && PoolStatus(a, "usage") == 0;
  })) << a.dump() << "\n" << b.dump() << cluster.Diagnostics();
  EXPECT_EQ(a["status"].value("usageSummary", ""), fmt::format("{}: 0/8", kPool)) << a.dump();
  EXPECT_EQ(a["spec"]["quotas"][0]["nominal"], 8) << "the status write must not touch spec";
  EXPECT_FALSE(Annotation(a, "kubectl.kubernetes.io/last-applied-configuration").empty());
  // Applying the same manifest again changes nothing (no new version, status kept).
  auto again = cluster.Apply(kTeamQueues);
  ASSERT_TRUE(again.ok()) << again.status();
  const Json a2 = Queue(cluster, "team-a");
  EXPECT_EQ(a2["metadata"]["generation"], a["metadata"]["generation"]) << a2.dump();
  EXPECT_EQ(a2["status"], a["status"]) << a2.dump();
}

// Step 2: team A floods. `first` (8 GPUs, within team-a's nominal 8) starts, then `borrower`
// (8 more: team-b's idle quota). Team A runs 16 > 8 GPUs and its queue shows 8 borrowed.
void TeamAFloods(Cluster& cluster) {
  Json a, b;
  ASSERT_TRUE(PollUntil([&] { return RunningGpus(cluster, "team-a") == 16; }))
      << Json(ListPods(cluster.client(), cluster.ns(), "phalanx.io/queue=team-a")).dump() << cluster.Diagnostics();
  ASSERT_TRUE(PollUntil([&] {
    a = Queue(cluster, "team-a");
    b = Queue(cluster, "team-b");
    return PoolStatus(a, "usage") == 16 && PoolStatus(a, "borrowed") == 8 && PoolStatus(b, "lent") == 8;
  })) << a.dump() << "\n" << b.dump();
  EXPECT_EQ(a["status"].value("usageSummary", ""), fmt::format("{}: 16/8 +8 borrowed", kPool)) << a.dump();
  EXPECT_EQ(PoolStatus(b, "usage"), 0) << b.dump();
  EXPECT_EQ(cluster.Metric("extender", fmt::format("phalanx_queue_borrowed_gpus{{queue=\"team-a\",pool=\"{}\"}}", kPool)),
            8.0)
      << cluster.Metrics("extender");
}

// Step 4: with the cohort full, another team-a gang waits gated, holding nothing, and `phalanx
// explain` names its queue and why.
void ExtraGangWaitsOnItsQueue(Cluster& cluster, const std::string& pod, const std::string& why) {
  std::string explained;
  ASSERT_TRUE(PollUntil([&] {
    explained = ExplainCli(cluster, cluster.ns() + "/" + pod);
    return explained.find(why) != std::string::npos;
  })) << explained << cluster.Diagnostics();
  const Json p = GetOrNull(cluster.client(), kPods, cluster.ns(), pod);
  EXPECT_TRUE(Gated(p)) << p.dump();
  EXPECT_TRUE(NodeName(p).empty()) << p.dump();
  EXPECT_TRUE(Annotation(p, "phalanx.io/devices").empty()) << p.dump();
  ::testing::Test::RecordProperty("explain_" + pod, explained);
}

TEST(E2eQueues, TeamBGetsItsQuotaBackByTheReclaimOfTeamABorrowedGangNeverOfItsNominalWork) {
  auto cluster = StartCluster(TwoTeamCluster());
  ASSERT_TRUE(cluster);
  auto& client = cluster->client();
  ApplyTeamQueues(*cluster);
  if (HasFatalFailure()) return;

  // Team A: a TrainingJob within its nominal quota, then a hand-made gang that borrows.
  ASSERT_TRUE(client.Create(kTrainingJobs, cluster->ns(),
                            TrainingJob({.name = "a-train", .replicas = 1, .checkpoint_dir = "/ckpt/a-train",
                                         .queue = "team-a"}))
                  .ok());
  const std::vector<Json> nominal_work = WaitAllRunning(*cluster, "phalanx.io/job-name=a-train", 1);
  ASSERT_EQ(Label(nominal_work.at(0), "phalanx.io/queue"), "team-a") << "the operator copies spec.scheduling.queue";
  ASSERT_TRUE(cluster->Apply(GangManifest("a-burst", 2, 4, "team-a")).ok());
  WaitAllRunning(*cluster, "phalanx.io/gang=a-burst", 2);
  TeamAFloods(*cluster);
  if (HasFatalFailure()) return;

  // Quota enforced: one more team-a gang finds team-a at 16/8 and nothing left to borrow.
  ASSERT_TRUE(client.Create(kTrainingJobs, cluster->ns(),
                            TrainingJob({.name = "a-more", .replicas = 1, .queue = "team-a"}))
                  .ok());
  ExtraGangWaitsOnItsQueue(*cluster, "a-more-a1-0",
                           fmt::format("queue team-a is at 16/8 nominal GPUs of {} and its cohort research has none to lend",
                                       kPool));
  EXPECT_TRUE(PollUntil([&] { return PendingGangs(Queue(*cluster, "team-a")) == 1; })) << Queue(*cluster, "team-a").dump();
  // A single labelled pod is held to the quota as well (a gang of one; created gated, as the
  // webhook does). Ungated, the filter-time check would hold it, but only where GPUs are free:
  // here kube-scheduler's own fit stops it first (the integration test
  // extender_queue_quota_itest covers that path on a cluster with room).
  ASSERT_TRUE(cluster->Apply(SinglePodManifest("a-notebook", 1, "team-a")).ok());
  ExtraGangWaitsOnItsQueue(*cluster, "a-notebook",
                           fmt::format("queue team-a is at 16/8 nominal GPUs of {} and its cohort research has none to lend",
                                       kPool));
  EXPECT_TRUE(PollUntil([&] { return PendingGangs(Queue(*cluster, "team-a")) == 2; })) << Queue(*cluster, "team-a").dump();

  // Team B's 8-GPU job: within its nominal quota, but its GPUs are lent out.
  const uint64_t rv_b = ListResourceVersion(client);
  ASSERT_TRUE(client.Create(kTrainingJobs, cluster->ns(),
                            TrainingJob({.name = "b-train", .replicas = 1, .queue = "team-b"}))
                  .ok());
  const std::vector<Json> b_pods = WaitAllRunning(*cluster, "phalanx.io/job-name=b-train", 1);
  if (HasFailure()) return;

  // The borrowed gang went, whole: both members disrupted by the eviction API and gone, each
  // told why (the queue reclaim) in an Event.
  for (const char* victim : {"a-burst-0", "a-burst-1"}) {
    EXPECT_TRUE(IsNotFound(client.Get(kPods, cluster->ns(), victim).status())) << victim;
  }
  const std::string b_pod = Name(b_pods.at(0));
  const auto history = PodHistory(*cluster, rv_b, "phalanx.io/gang in (a-burst,b-train-a1)", {"a-burst-0", "a-burst-1"});
  uint64_t last_victim_gone = 0;
  for (const char* victim : {"a-burst-0", "a-burst-1"}) {
    const uint64_t disrupted = FirstVersion(history, victim, [](const Json& o) {
      const Json c = ConditionOf(o, "DisruptionTarget");
      return c.is_object() && c.value("reason", "") == "EvictionByEvictionAPI";
    });
    EXPECT_GT(disrupted, 0u) << victim << " was not evicted through the eviction API";
    for (const auto& e : history) {
      if (e["type"] == "DELETED" && Name(e["object"]) == victim) last_victim_gone = std::max(last_victim_gone, Rv(e["object"]));
    }
    std::vector<std::string> events;
    EXPECT_TRUE(PollUntil([&] {
      events = EventsAbout(*cluster, "Pod", victim);
      return AnyContains(events, "queue reclaim", "queue team-b reclaims its nominal quota");
    })) << victim << ": " << Json(events).dump();
  }
  // Admitted after the reclaim: b-train's gate was lifted only once both victims were gone.
  const uint64_t b_ungated = FirstVersion(history, b_pod, [](const Json& o) { return !Gated(o); });
  EXPECT_GT(last_victim_gone, 0u);
  EXPECT_GT(b_ungated, last_victim_gone) << "team-b was admitted before the borrowed GPUs were free";

  // Never by preempting team-a's work within its nominal quota: a-train's pod is the same one,
  // never disrupted, still attempt 1.
  const Json a_job = GetOrNull(client, kTrainingJobs, cluster->ns(), "a-train");
  EXPECT_EQ(a_job["status"].value("attempt", 0), 1) << a_job.dump();
  EXPECT_EQ(a_job["status"].value("disruptions", 0), 0) << a_job.dump();
  const Json a_pod = GetOrNull(client, kPods, cluster->ns(), Name(nominal_work.at(0)));
  EXPECT_EQ(Uid(a_pod), Uid(nominal_work.at(0)));
  EXPECT_EQ(Phase(a_pod), "Running");
  EXPECT_FALSE(Terminating(a_pod));
  EXPECT_TRUE(ConditionOf(a_pod, "DisruptionTarget").is_null()) << a_pod.dump();
  EXPECT_TRUE(cluster->scheduler()->victims().empty()) << "kube-scheduler's own preemption took part";

  // The queues as the extender reports them: team-a back at its nominal 8, team-b at 8, the
  // extra team-a gang still waiting (team-b's quota is not lent while team-b uses it).
  Json a, b;
  EXPECT_TRUE(PollUntil([&] {
    a = Queue(*cluster, "team-a");
    b = Queue(*cluster, "team-b");
    return PoolStatus(a, "usage") == 8 && PoolStatus(a, "borrowed") == 0 && PoolStatus(b, "usage") == 8 &&
           PoolStatus(b, "lent") == 0 && PendingGangs(a) == 2;
  })) << a.dump() << "\n" << b.dump();
  EXPECT_EQ(RunningGpus(*cluster, "team-a"), 8);
  EXPECT_EQ(RunningGpus(*cluster, "team-b"), 8);
  for (const char* waiting : {"a-more-a1-0", "a-notebook"}) {
    ExtraGangWaitsOnItsQueue(*cluster, waiting,
                             fmt::format("queue team-a is at 8/8 nominal GPUs of {} and its cohort research has none to lend",
                                         kPool));
  }
  EXPECT_GE(cluster->Metric("extender", "phalanx_extender_preemptions_accepted").value_or(0), 1);
}


// Plays rank 0's worker: reports a committed checkpoint to the operator's progress endpoint with
// the pod's bound token (recognised by the fake API server's TokenReview).
void ReportCheckpoint(Cluster& cluster, const Json& pod, int step, const std::string& path) {
  fakes::apiserver::testing::RawClient api(cluster.api_url());
  const std::string token = "token-" + Name(pod);
  const Json review = {{"token", token},
                       {"username", "system:serviceaccount:ml:default"},
                       {"uid", "sa-uid"},
                       {"extra", {{"authentication.kubernetes.io/pod-name", {Name(pod)}},
                                  {"authentication.kubernetes.io/pod-uid", {Uid(pod)}}}}};
  ASSERT_EQ(api.Post("/fake/tokens", review).status, 200);
  fakes::apiserver::testing::RawClient progress(cluster.progress_url());
  progress.set_token(token);
  const auto answer = progress.Post("/progress", Json{{"step", step}, {"path", path}, {"committed", true}});
  ASSERT_EQ(answer.status, 200) << answer.body << cluster.Diagnostics();
}

ClusterOptions GracefulCluster() {
  ClusterOptions options = TwoTeamCluster();
  options.progress_endpoint = true;
  // The workers write nothing more when stopped: the checkpoint kept is the one made on notice.
  options.termination_message = [](const Json&) { return std::string(R"({"step":0,"path":"","committed":false})"); };
  // The extender chooses the notice only once the job's status.preemptionCost says it is
  // cheaper than the work at risk: refreshed every second here, not every 30 s.
  options.extra_operator_args = {"--preemption-cost-seconds", "1"};
  return options;
}

struct NoticeGiven {
  std::vector<Json> nominal_work;  // team-a's gang within its nominal quota
  Json rank0;                      // the borrowing TrainingJob's pod, carrying the notice
  std::string request;             // the job's phalanx.io/preempt-request
};

// Team A: a hand-made gang within its nominal quota, then a TrainingJob that checkpoints
// (flushSeconds 2) and borrows; team B's 8-GPU job arrives and the reclaim asks the TrainingJob
// to checkpoint and stop (phalanx.io/preempt-request, the operator's notice on its pod) instead
// of evicting it.
void TeamBArrivesWhileTeamABorrowsWithACheckpointingJob(Cluster& cluster, NoticeGiven* out) {
  auto& client = cluster.client();
  ApplyTeamQueues(cluster);
  if (::testing::Test::HasFatalFailure()) return;
  ASSERT_TRUE(cluster.Apply(GangManifest("a-base", 2, 4, "team-a")).ok());
  out->nominal_work = WaitAllRunning(cluster, "phalanx.io/gang=a-base", 2);
  ASSERT_TRUE(client.Create(kTrainingJobs, cluster.ns(),
                            TrainingJob({.name = "a-train", .replicas = 1, .checkpoint_dir = "/ckpt/a-train",
                                         .flush_seconds = 2, .queue = "team-a"}))
                  .ok());
  const std::vector<Json> attempt1 = WaitAllRunning(cluster, "phalanx.io/job-name=a-train", 1);
  ASSERT_EQ(attempt1.size(), 1u);
  TeamAFloods(cluster);
  if (::testing::Test::HasFatalFailure()) return;
  // Notice is cheaper than the lost work once the job has run longer than its 2 s flush; the
  // operator refreshes status.preemptionCost (what the extender weighs) every second here.
  Json job;
  ASSERT_TRUE(PollUntil(
      [&] {
        job = GetOrNull(client, kTrainingJobs, cluster.ns(), "a-train");
        return job["status"]["preemptionCost"].value("gpuSecondsAtRisk", 0.0) > 8 * 2;
      }))
      << job.dump();

  ASSERT_TRUE(client.Create(kTrainingJobs, cluster.ns(), TrainingJob({.name = "b-train", .replicas = 1, .queue = "team-b"}))
                  .ok());
  ASSERT_TRUE(PollUntil([&] {
    out->rank0 = GetOrNull(client, kPods, cluster.ns(), Name(attempt1.at(0)));
    return !Annotation(out->rank0, "phalanx.io/preempt-notice").empty();
  })) << out->rank0.dump() << GetOrNull(client, kTrainingJobs, cluster.ns(), "a-train").dump() << cluster.Diagnostics();
  out->request = Annotation(GetOrNull(client, kTrainingJobs, cluster.ns(), "a-train"), "phalanx.io/preempt-request");
  ASSERT_FALSE(out->request.empty());
}

// The graceful reclaim: the worker checkpoints on notice, the operator drains the gang, team-b
// runs, and the job's next attempt waits on team-a's quota, then resumes from that checkpoint
// once team-b's job is done.
TEST(E2eQueues, ABorrowedTrainingJobIsToldToCheckpointAndResumesFromItAfterTheReclaim) {
  auto cluster = StartCluster(GracefulCluster());
  ASSERT_TRUE(cluster);
  auto& client = cluster->client();
  NoticeGiven notice;
  TeamBArrivesWhileTeamABorrowsWithACheckpointingJob(*cluster, &notice);
  if (HasFatalFailure()) return;
  const Json& pod = notice.rank0;
  const std::string rank0 = Name(pod);
  EXPECT_EQ(Phase(pod), "Running");
  EXPECT_FALSE(Terminating(pod)) << "the graceful notice was not honoured: the pod is already going";
  for (const auto& p : ListPods(client, cluster->ns(), "phalanx.io/job-name=b-train")) {
    EXPECT_TRUE(Gated(p)) << "team-b admitted before the borrowed GPUs were returned";
  }
  const std::vector<Json>& nominal_work = notice.nominal_work;
  Json job;

  // The worker checkpoints on notice; the operator drains the gang at once (not at the deadline).
  ReportCheckpoint(*cluster, pod, 42, "/ckpt/a-train/step-42");
  if (HasFatalFailure()) return;
  const std::vector<Json> b_pods = WaitAllRunning(*cluster, "phalanx.io/job-name=b-train", 1);
  EXPECT_TRUE(IsNotFound(client.Get(kPods, cluster->ns(), rank0).status())) << rank0;
  job = GetOrNull(client, kTrainingJobs, cluster->ns(), "a-train");
  EXPECT_EQ(job["status"]["preemption"].value("outcome", ""), "Checkpointed") << job["status"].dump();
  EXPECT_EQ(job["status"]["checkpoint"]["lastCommitted"].value("path", ""), "/ckpt/a-train/step-42")
      << job["status"].dump();
  EXPECT_GE(job["status"].value("disruptions", 0), 1) << job["status"].dump();
  // The notice is visible on the job: that it is the queue's reclaim (README known problem 2,
  // fixed), then the drain after the checkpoint.
  EXPECT_NE(notice.request.find("queue team-b reclaims its nominal quota"), std::string::npos) << notice.request;
  std::vector<std::string> events;
  EXPECT_TRUE(PollUntil([&] {
    events = EventsAbout(*cluster, "TrainingJob", "a-train");
    return AnyContains(events, "PreemptionRequested", "queue team-b reclaims its nominal quota") &&
           AnyContains(events, "PreemptionDraining", "Checkpointed");
  })) << Json(events).dump();

  // Never team-a's work within its nominal quota: a-base's pods are the same, never disrupted.
  for (const auto& before : nominal_work) {
    const Json now = GetOrNull(client, kPods, cluster->ns(), Name(before));
    EXPECT_EQ(Uid(now), Uid(before)) << Name(before);
    EXPECT_EQ(Phase(now), "Running") << Name(before);
    EXPECT_TRUE(ConditionOf(now, "DisruptionTarget").is_null()) << now.dump();
  }

  // Attempt 2 waits on team-a's quota (8/8, team-b uses its own) and resumes from the checkpoint.
  std::vector<Json> attempt2;
  ASSERT_TRUE(PollUntil([&] {
    attempt2 = ListPods(client, cluster->ns(), "phalanx.io/job-name=a-train,phalanx.io/attempt=2");
    return attempt2.size() == 1;
  })) << cluster->Diagnostics();
  EXPECT_EQ(EnvOf(attempt2.at(0), "PHALANX_RESUME_FROM"), "/ckpt/a-train/step-42") << attempt2.at(0).dump();
  ExtraGangWaitsOnItsQueue(*cluster, Name(attempt2.at(0)),
                           fmt::format("queue team-a is at 8/8 nominal GPUs of {} and its cohort research has none to lend",
                                       kPool));

  // Team B's job ends: team-a borrows again and the job goes on from step 42.
  ASSERT_TRUE(cluster->kubelet_driver(NodeName(b_pods.at(0))).Finish(cluster->ns(), Name(b_pods.at(0)), 0, "").ok());
  attempt2 = WaitAllRunning(*cluster, "phalanx.io/job-name=a-train,phalanx.io/attempt=2", 1);
  if (HasFailure()) return;
  ASSERT_TRUE(cluster->kubelet_driver(NodeName(attempt2.at(0)))
                  .Finish(cluster->ns(), Name(attempt2.at(0)), 0, R"({"step":100,"path":"/ckpt/a-train/final","committed":true})")
                  .ok());
  bool succeeded = false;
  job = WaitJobPhase(*cluster, "a-train", "Succeeded", &succeeded);
  EXPECT_TRUE(succeeded) << job.dump() << cluster->Diagnostics();
}

}  // namespace
}  // namespace phalanx::e2e
