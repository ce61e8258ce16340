// Issue 23 item 7: a 64 x 8 TrainingJob applied as `kubectl apply` does, on 64 dgx-h100 nodes,
// is all bound well within a hang deadline, through the real operator and extender behind the
// SchedulerDriver's v1.26 queue. The API server's writes take 20 ms here (etcd's commit and
// admission on a real one), which makes a serial creator visible: 64 creates one after another
// cannot take less than 1.28 s. The stage table (bench/e2e/gang_start_bench.cc measures it over
// several runs) is printed and recorded as test properties.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "core/json/json.h"
#include "tests/e2e/harness/gang_start_timeline.h"
#include "tests/e2e/scenario_helpers.h"
#include "tests/fakes/apiserver/raw_client.h"

namespace phalanx::e2e {
namespace {

using kube::Json;

constexpr int kNodes = 64, kMembers = 64;
constexpr int kWriteLatencyMs = 20;

std::string JobYaml() {
  return json::Dump(Json{{"apiVersion", "phalanx.io/v1alpha1"},
                         {"kind", "TrainingJob"},
                         {"metadata", {{"name", "llm"}}},
                         {"spec",
                          {{"replicas", kMembers},
                           {"gpusPerReplica", 8},
                           {"scheduling", {{"priorityClassName", "phalanx-standard"}}},
                           {"template",
                            {{"spec", {{"containers", Json::array({{{"name", "trainer"}, {"image", "trainer:e2e"}}})}}}}}}}});
}

TEST(E2eGangStart, SixtyFourByEightIsAllBoundWithTheCommitBeforeAnyBindingAndPodsCreatedInParallel) {
  ClusterOptions options;
  for (int i = 0; i < kNodes; ++i) {
    NodeSpec n{fmt::format("node-{:02d}", i)};
    n.agents = i == 0;  // one kubelet + device plugin; the others carry its published state
    options.nodes.push_back(n);
  }
  options.kube_scheduler_queue = true;
  auto cluster = StartCluster(options);
  ASSERT_TRUE(cluster);
  fakes::apiserver::testing::RawClient api(cluster->api_url());
  ASSERT_EQ(api.Post(fmt::format("/fake/write-latency?ms={}", kWriteLatencyMs), Json::object()).status, 200);

  const uint64_t rv = ListResourceVersion(cluster->client());
  WatchRecorder pods(cluster->client(), kube::resources::kPods, cluster->ns(), rv);
  WatchRecorder jobs(cluster->client(), kube::resources::kTrainingJobs, cluster->ns(), rv);
  ASSERT_EQ(pods.error(), "");
  const SteadyTime apply = std::chrono::steady_clock::now();
  auto applied = cluster->Apply(JobYaml());
  ASSERT_TRUE(applied.ok()) << applied.status();
  GangStartMilestones m;
  ASSERT_TRUE(PollUntil([&] {
    m = ReadMilestones("llm", jobs.events(), pods.events(), cluster->scheduler()->calls(), apply);
    return m.bound.count == kMembers;
  })) << m.bound.count << " of " << kMembers << " bound, " << m.ungated.count << " ungated\n"
      << cluster->Diagnostics();

  std::string table;
  for (const Stage& s : CriticalPath(m)) {
    table += fmt::format("  {:<72} {:>6.0f} ms\n", s.name, s.ms.value_or(-1));
    ::testing::Test::RecordProperty(s.name, fmt::format("{:.0f}", s.ms.value_or(-1)));
  }
  std::printf("apply -> all %d bound: %.0f ms (writes +%d ms)\n%s", kMembers, *m.bound.last, kWriteLatencyMs,
              table.c_str());

  // Every member was created gated, and the commit point (devices on every member, every gate
  // lifted) came before the first Binding: the gang invariants at 64 members.
  EXPECT_EQ(m.created.count, kMembers);
  for (const auto& e : pods.events()) {
    if (e.type == "ADDED") {
      EXPECT_TRUE(Gated(e.object)) << Name(e.object) << " was created without the gate";
    }
  }
  ASSERT_EQ(m.devices.count, kMembers);
  ASSERT_EQ(m.ungated.count, kMembers);
  EXPECT_LT(*m.devices.last, *m.bound.first) << "a member was bound before every member carried its devices";
  EXPECT_LT(*m.ungated.last, *m.bound.first);
  // Created in parallel: one request at a time, the 63 creates after the first take at least
  // 63 x 20 ms. (Measured ~0.15-0.25 s with slow-start batches; the serial operator 1.3-1.5 s.)
  EXPECT_LT(*m.created.last - *m.created.first, (kMembers - 1) * kWriteLatencyMs)
      << "the operator created the gang's pods one at a time";
}

}  // namespace
}  // namespace phalanx::e2e
