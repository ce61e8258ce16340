// Issue 9 §2, scenario 5: the extender is killed while it holds a gang member's bind at the gang
// barrier, and restarted: no member was bound alone, the new extender rebuilds its ledger from the
// API server and the job still completes.
#include <gtest/gtest.h>

#include <algorithm>

#include "tests/e2e/scenario_helpers.h"
#include "tests/e2e/scenario_objects.h"

namespace phalanx::e2e {
namespace {

using kube::Json;
using kube::resources::kTrainingJobs;

TEST(E2eRestart, ExtenderKilledMidGangLeavesNoHalfBoundGangAndTheJobCompletes) {
  auto cluster = StartCluster({.nodes = {{"node-a"}, {"node-b"}}});
  ASSERT_TRUE(cluster);
  auto& client = cluster->client();
  // Member 1 is left alone by the (slow) scheduler, so member 0's bind waits at the barrier.
  cluster->scheduler()->Hold("phalanx.io/replica-index", "1");
  const uint64_t rv0 = ListResourceVersion(client);
  ASSERT_TRUE(client.Create(kTrainingJobs, "ml", TrainingJob({.name = "resilient"})).ok());
  ASSERT_TRUE(PollUntil([&] {
    return cluster->Metric("extender", "phalanx_extender_held_binds").value_or(0) == 1;
  })) << cluster->Diagnostics();

  // Crash the extender with the bind held: the scheduler's bind call fails; nothing is bound.
  ASSERT_TRUE(cluster->RestartExtender().ok()) << cluster->Diagnostics();
  for (const auto& p : ListPods(client, "ml", "phalanx.io/job-name=resilient")) {
    EXPECT_TRUE(NodeName(p).empty()) << "half-bound gang: " << p.dump();
  }

  // The restarted extender (new ledger, rebuilt from the API server) completes the gang.
  cluster->scheduler()->Release();
  std::vector<Json> pods;
  ASSERT_TRUE(PollUntil([&] {
    pods = ListPods(client, "ml", "phalanx.io/job-name=resilient");
    return pods.size() == 2 &&
           std::all_of(pods.begin(), pods.end(), [](const Json& p) { return Phase(p) == "Running"; });
  })) << Json(pods).dump() << cluster->Diagnostics();
  // Same attempt: the crash was no disruption of the job.
  for (const auto& p : pods) EXPECT_EQ(Label(p, "phalanx.io/attempt"), "1");

  // Never half-bound: every member carried its devices before the first Binding, and the devices
  // are distinct across members.
  const auto history = PodHistory(*cluster, rv0, "phalanx.io/job-name=resilient");
  uint64_t last_devices = 0, first_bound = UINT64_MAX;
  for (const auto& p : pods) {
    const uint64_t devices =
        FirstVersion(history, Name(p), [](const Json& o) { return !Annotation(o, "phalanx.io/devices").empty(); });
    const uint64_t bound = FirstVersion(history, Name(p), [](const Json& o) { return !NodeName(o).empty(); });
    ASSERT_GT(devices, 0u) << Name(p);
    ASSERT_GT(bound, 0u) << Name(p);
    last_devices = std::max(last_devices, devices);
    first_bound = std::min(first_bound, bound);
  }
  EXPECT_LT(last_devices, first_bound);
  EXPECT_GE(cluster->Metric("extender", "phalanx_extender_gangs_bound").value_or(0), 1);

  for (const auto& p : pods) {
    ASSERT_TRUE(cluster->kubelet_driver(NodeName(p)).Finish("ml", Name(p), 0, "").ok());
  }
  bool succeeded = false;
  Json job = WaitJobPhase(*cluster, "resilient", "Succeeded", &succeeded);
  EXPECT_TRUE(succeeded) << job.dump() << cluster->Diagnostics();
}

}  // namespace
}  // namespace phalanx::e2e
