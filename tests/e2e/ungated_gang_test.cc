// Issue 26 item 1: the filter-time fallback for ungated gangs (no webhook) behind kube-scheduler
// v1.26's scheduling queue (the SchedulerDriver's model, drivers/scheduling_queue.h). A member the
// extender refuses while its gang is incomplete is parked in unschedulablePods, which nothing
// about its gang leaves; the active extender touches it (phalanx.io/requeued-at) once the gang
// can be placed, and the pod update brings it back (extender/admission/gang_requeue.cc). Without that,
// the members wait for the 5-minute flush: the test would miss its 60 s deadline.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include "tests/e2e/scenario_helpers.h"
#include "tests/e2e/scenario_objects.h"

namespace phalanx::e2e {
namespace {

using kube::Json;
using kube::resources::kPods;

Json Member(const std::string& name, const std::string& gang, const std::string& min_members) {
  Json pod = GpuPod(name, 8, "phalanx-standard");
  pod["metadata"]["labels"]["phalanx.io/gang"] = gang;
  if (!min_members.empty()) pod["metadata"]["annotations"]["phalanx.io/gang-min-members"] = min_members;
  return pod;
}

// Creates the members `delay` apart and returns the seconds until all are bound.
double BindTime(Cluster& cluster, const std::string& gang, const std::string& min_members,
                std::chrono::milliseconds delay) {
  auto& client = cluster.client();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 2; ++i) {
    if (i > 0) std::this_thread::sleep_for(delay);  // the second member arrives later (a slow controller)
    EXPECT_TRUE(client.Create(kPods, "ml", Member(gang + "-" + std::to_string(i), gang, min_members)).ok());
  }
  const bool bound = PollUntil([&] {
    auto pods = ListPods(client, "ml", "phalanx.io/gang=" + gang);
    return pods.size() == 2 &&
           std::all_of(pods.begin(), pods.end(), [](const Json& p) { return !NodeName(p).empty(); });
  });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(bound) << "not bound after " << seconds << " s\n" << cluster.Diagnostics();
  return seconds;
}

TEST(E2eUngatedGang, TwoByEightWithoutTheWebhookBindsPromptlyBehindKubeSchedulersQueue) {
  auto cluster = StartCluster({.nodes = {{"node-a"}, {"node-b"}}, .start_operator = false, .kube_scheduler_queue = true});
  ASSERT_TRUE(cluster);
  // min-members given, the second member 1.5 s late: the first is refused ("1 of 2 members")
  // and parked; the second's filter plans the gang and its bind waits at the barrier for the first.
  const double late = BindTime(*cluster, "late", "2", std::chrono::milliseconds(1500));
  // Free the nodes again (two 8-GPU nodes hold one 2x8 gang).
  for (int i = 0; i < 2; ++i) {
    kube::DeleteOptions now;
    now.grace_period_seconds = 0;
    (void)cluster->client().Delete(kPods, "ml", "late-" + std::to_string(i), now);
  }
  ASSERT_TRUE(PollUntil([&] { return ListPods(cluster->client(), "ml", "phalanx.io/gang=late").empty(); }));
  // No min-members: both are refused while the member count settles, and both are parked.
  const double settling = BindTime(*cluster, "settle", "", std::chrono::milliseconds(0));
  const auto events = cluster->scheduler()->queue_events();
  EXPECT_NE(std::find(events.begin(), events.end(), "PodUpdate"), events.end())
      << "the members left unschedulablePods through an update of their own object";
  EXPECT_EQ(std::find(events.begin(), events.end(), "UnschedulableTimeout"), events.end());
  EXPECT_GE(cluster->Metric("extender", "phalanx_extender_ungated_requeues").value_or(0), 2);
  std::fprintf(stderr, "ungated 2x8 bound after: late member %.1f s, settling count %.1f s\n", late, settling);
}

}  // namespace
}  // namespace phalanx::e2e
