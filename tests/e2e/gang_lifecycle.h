// The gang lifecycle the hardening tests run under faults and crashes (docs/hardening.md): a spot
// 2 x 8 TrainingJob is admitted, its gates lifted, its members bound; a phalanx-critical pod
// preempts it; the operator restarts it from its checkpoint; attempt 2 runs and the job succeeds.
// Then the invariants: never half-bound, never half-evicted, the checkpoint kept, the disruption
// counted once, usage counted once. `on_poll` runs on the test thread at every poll (a crash test
// kills and restarts daemons from it). Needs a cluster of two DGX H100 nodes, "node-a" and
// "node-b", with the operator and the extender.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/drivers/time_format.h"
#include "tests/e2e/scenario_helpers.h"
#include "tests/e2e/scenario_objects.h"

namespace phalanx::e2e {

namespace lifecycle_internal {

inline double Seconds(const std::string& from, const std::string& to) {
  return std::chrono::duration<double>(ParseRfc3339(to) - ParseRfc3339(from)).count();
}

inline std::string FinishedAt(const kube::Json& pod) {
  if (!pod.contains("status") || !pod["status"].contains("containerStatuses")) return "";
  const kube::Json& s = pod["status"]["containerStatuses"][0]["state"];
  return s.contains("terminated") ? s["terminated"].value("finishedAt", "") : "";
}

inline bool HasCondition(const kube::Json& pod, const std::string& type) {
  if (!pod.contains("status") || !pod["status"].contains("conditions")) return false;
  for (const auto& c : pod["status"]["conditions"]) {
    if (c.value("type", "") == type) return true;
  }
  return false;
}

// The last state of each pod in `history` (a pod's DELETED event carries its final status).
inline std::map<std::string, kube::Json> LastStates(const std::vector<kube::Json>& history) {
  std::map<std::string, kube::Json> last;
  for (const auto& e : history) last[Name(e["object"])] = e["object"];
  return last;
}

}  // namespace lifecycle_internal

// Runs the lifecycle of job `name` and checks its invariants with gtest assertions.
// `completed`: set when it ran to the end (its fatal assertions return early). `usage_slack`:
// GPU-seconds status.usage may differ from the pods' held time (0: exact).
inline void RunGangLifecycle(Cluster& cluster, const std::string& name, const std::function<void()>& on_poll,
                             bool* completed, double usage_slack = 0) {
  *completed = false;
  using kube::Json;
  using kube::resources::kPods;
  using kube::resources::kTrainingJobs;
  using namespace lifecycle_internal;
  auto& client = cluster.client();
  const std::string ns = cluster.ns();
  const std::string selector = "phalanx.io/job-name=" + name;
  const uint64_t rv0 = ListResourceVersion(client);

  // Admitted, gates lifted, bound: attempt 1 runs.
  ASSERT_TRUE(client.Create(kTrainingJobs, ns,
                            TrainingJob({.name = name, .priority_class = "phalanx-spot",
                                         .checkpoint_dir = "/ckpt/" + name}))
                  .ok());
  std::vector<Json> attempt1;
  ASSERT_TRUE(PollUntil([&] {
    on_poll();
    attempt1 = ListPods(client, ns, selector + ",phalanx.io/attempt=1");
    return attempt1.size() == 2 &&
           std::all_of(attempt1.begin(), attempt1.end(), [](const Json& p) { return Phase(p) == "Running"; });
  })) << "attempt 1 never ran: " << Json(attempt1).dump() << cluster.Diagnostics();

  // Preempted by a critical pod: the whole gang goes, attempt 2 resumes from the checkpoint.
  const std::string critical = "crit-" + name;
  ASSERT_TRUE(client.Create(kPods, ns, GpuPod(critical, 1, "phalanx-critical")).ok());
  Json job;
  ASSERT_TRUE(PollUntil([&] {
    on_poll();
    job = GetOrNull(client, kTrainingJobs, ns, name);
    return job["status"].value("attempt", 0) >= 2 && job["status"].contains("checkpoint");
  })) << "never restarted: " << job.dump() << cluster.Diagnostics();
  const Json committed = job["status"]["checkpoint"]["lastCommitted"];
  const std::string resume_from = committed.value("path", "");
  EXPECT_EQ(resume_from.rfind("/ckpt/" + name + "-a1-", 0), 0u) << committed.dump();
  std::vector<std::string> attempt1_names;
  for (const auto& p : attempt1) attempt1_names.push_back(Name(p));
  ASSERT_TRUE(PollUntil([&] {
    on_poll();
    return std::all_of(attempt1_names.begin(), attempt1_names.end(),
                       [&](const std::string& n) { return IsNotFound(client.Get(kPods, ns, n).status()); });
  })) << "half-evicted gang" << cluster.Diagnostics();

  // The critical pod runs and ends; attempt 2 runs from the checkpoint and succeeds.
  Json crit;
  ASSERT_TRUE(PollUntil([&] {
    on_poll();
    crit = GetOrNull(client, kPods, ns, critical);
    return Phase(crit) == "Running";
  })) << crit.dump() << cluster.Diagnostics();
  ASSERT_TRUE(cluster.kubelet_driver(NodeName(crit)).Finish(ns, critical, 0, "").ok());
  std::vector<Json> attempt2;
  ASSERT_TRUE(PollUntil([&] {
    on_poll();
    attempt2 = ListPods(client, ns, selector + ",phalanx.io/attempt=2");
    return attempt2.size() == 2 &&
           std::all_of(attempt2.begin(), attempt2.end(), [](const Json& p) { return Phase(p) == "Running"; });
  })) << "attempt 2 never ran: " << Json(attempt2).dump() << cluster.Diagnostics();
  for (const auto& p : attempt2) {
    EXPECT_EQ(EnvOf(p, "PHALANX_RESUME_FROM"), resume_from) << "checkpoint lost: " << Name(p);
    ASSERT_TRUE(cluster.kubelet_driver(NodeName(p))
                    .Finish(ns, Name(p), 0, R"({"step":1000,"path":"/ckpt/final","committed":true})")
                    .ok());
  }
  ASSERT_TRUE(PollUntil([&] {
    on_poll();
    job = GetOrNull(client, kTrainingJobs, ns, name);
    return JobPhase(job) == "Succeeded";
  })) << job.dump() << cluster.Diagnostics();


  // Disruption counted once; the checkpoint kept.
  EXPECT_EQ(job["status"].value("disruptions", -1), 1) << job["status"].dump();
  EXPECT_TRUE(job["status"]["checkpoint"].contains("lastCommitted")) << job["status"].dump();

  // Never half-bound, never half-evicted, from the API's history of the job's pods.
  std::vector<std::string> gone = attempt1_names;
  const auto history = PodHistory(cluster, rv0, selector, gone);
  for (const auto* attempt : {&attempt1, &attempt2}) {
    uint64_t last_ungated = 0, last_devices = 0, first_bound = UINT64_MAX;
    for (const auto& p : *attempt) {
      const std::string n = Name(p);
      const uint64_t ungated = FirstVersion(history, n, [](const Json& o) { return !Gated(o); });
      const uint64_t devices =
          FirstVersion(history, n, [](const Json& o) { return !Annotation(o, "phalanx.io/devices").empty(); });
      const uint64_t bound = FirstVersion(history, n, [](const Json& o) { return !NodeName(o).empty(); });
      EXPECT_GT(bound, 0u) << n << " never bound";
      last_ungated = std::max(last_ungated, ungated);
      last_devices = std::max(last_devices, devices);
      first_bound = std::min(first_bound, bound);
    }
    EXPECT_LT(last_ungated, first_bound) << "a member was bound before the gang's gates were all lifted";
    EXPECT_LT(last_devices, first_bound) << "a member was bound before the gang's commit point";
  }
  // Never half-evicted: the preemption marked the gang (DisruptionTarget), and every attempt-1
  // member was gone (evicted, deleted by the scheduler, or by the operator's restart) before any
  // attempt-2 member was bound.
  uint64_t disrupted = 0, last_gone = 0, attempt2_bound = UINT64_MAX;
  for (const auto& n : attempt1_names) {
    disrupted += FirstVersion(history, n, [](const Json& o) { return HasCondition(o, "DisruptionTarget"); }) > 0;
    for (const auto& e : history) {
      if (e["type"] == "DELETED" && Name(e["object"]) == n) last_gone = std::max(last_gone, Rv(e["object"]));
    }
  }
  for (const auto& p : attempt2) {
    attempt2_bound = std::min(attempt2_bound, FirstVersion(history, Name(p), [](const Json& o) { return !NodeName(o).empty(); }));
  }
  EXPECT_GE(disrupted, 1u) << "no attempt-1 member was marked DisruptionTarget";
  EXPECT_GT(last_gone, 0u);
  EXPECT_LT(last_gone, attempt2_bound) << "attempt 2 was bound while attempt 1 was still partly there";

  // Usage: the job's GPU-seconds are its pods' held GPU time, once.
  const auto last = LastStates(history);
  auto expected_usage = [&] {
    double held = 0;
    const std::string since = job["status"]["usage"].value("since", "");
    for (const auto& [pod, object] : last) {
      const std::string started = Str(object, "status", "startTime");
      const std::string finished = FinishedAt(object);
      if (started.empty() || finished.empty()) continue;
      held += static_cast<double>(PodGpus(object)) * std::max(0.0, Seconds(std::max(started, since), finished));
    }
    return held;
  };
  // Usage is the pods' held time, exactly, also when the operator's view of the pods lagged (watch
  // faults: status.usage.pods corrects it, docs/operator.md "A lagging view"); `usage_slack` allows
  // a known difference where a scenario needs one.
  double held = 0, counted = 0;
  const bool exact = PollUntil([&] {
    on_poll();
    job = GetOrNull(client, kTrainingJobs, ns, name);
    held = expected_usage();
    counted = job["status"]["usage"].value("gpuSeconds", -1.0);
    return std::abs(counted - held) < 1e-6;
  }, std::chrono::seconds(usage_slack > 0 ? 5 : 15));
  EXPECT_LE(std::abs(counted - held), usage_slack + 1e-6)
      << "usage " << counted << " GPU-s, pods held " << held << ": " << job["status"]["usage"].dump();
  if (!exact) {
    std::fprintf(stderr, "usage of %s: %.1f GPU-s counted, pods held %.1f: %s\n", name.c_str(), counted, held,
                 job["status"]["usage"].dump().c_str());
  }

  *completed = true;
}

}  // namespace phalanx::e2e
