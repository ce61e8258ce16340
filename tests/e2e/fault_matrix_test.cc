// Issue 27 §3: the gang lifecycle under injected API faults. One cluster (fake API server, two
// DGX H100 nodes with their device plugins, the operator, the extender, the scheduler and kubelet
// drivers) runs every cell in turn: the cell's fault rules go into the fake API server
// (tests/fakes/apiserver/faults.h), aimed at the daemons' clients by User-Agent (the drivers,
// which play kube-scheduler and kubelet, are never faulted), then a spot 2 x 8 TrainingJob is
// admitted, its gates lifted, bound, preempted by a phalanx-critical pod, restarted from its
// checkpoint, and run to success. After each cell:
//   - every rule fired (a cell whose fault never happened tests nothing);
//   - no gang half-bound: every member of each attempt carried its devices and was ungated before
//     the attempt's first Binding, and all were bound; no gang half-evicted: every attempt-1 member
//     got DisruptionTarget and is gone;
//   - the last committed checkpoint is never lost (attempt 2 resumes from it, the final status
//     still has one) and the disruption is counted once (status.disruptions == 1);
//   - no usage double-counted: status.usage.gpuSeconds = the pods' held GPU time from the API's
//     timestamps;
//   - every daemon recovers without a restart: same processes, and the next cell runs on them.
// The shared cluster is the point: a daemon left broken by one cell fails the next.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <cstdio>
#include <cstdlib>
#include <set>

#include <fmt/format.h>

#include "core/json/json.h"
#include "tests/e2e/gang_lifecycle.h"
#include "tests/fakes/apiserver/raw_client.h"

namespace phalanx::e2e {
namespace {

using fakes::apiserver::testing::RawClient;
using kube::Json;
using kube::resources::kPods;
using kube::resources::kTrainingJobs;

struct FaultCell {
  std::string name;
  std::vector<Json> rules;    // POST /fake/faults bodies; "name" is set from the cell
  bool drop_watches = false;  // then end every watch, so the daemons watch again into the fault
  // GPU-seconds the job's usage may be off by: the operator's view lags under watch faults
  // (docs/hardening.md, findings); 0 = exact.
  double usage_slack = 0;
};

// Was 48 (16 GPUs x 3 s of lag) until status.usage.pods let the operator correct a lagging view
// (docs/operator.md "A lagging view"): usage is now exact in the watch cells too.
constexpr double kWatchLagSlack = 0;

// The daemons' clients: "phalanx-operator/…", "phalanx-extender/…", "phalanx-device-plugin". The
// drivers' client is plain "phalanx".
constexpr const char* kDaemons = "phalanx-";

std::vector<FaultCell> Cells() {
  return {
      {"operator-create-pods-500",
       {{{"client", "phalanx-operator"}, {"verb", "create"}, {"resource", "pods"}, {"code", 500}, {"count", 2}}}},
      {"operator-create-pods-timeout-after-apply",
       {{{"client", "phalanx-operator"}, {"verb", "create"}, {"resource", "pods"}, {"kind", "timeout"},
         {"delayMs", 100}, {"afterApply", true}, {"count", 1}}}},
      {"operator-status-429-retry-after",
       {{{"client", "phalanx-operator"}, {"resource", "trainingjobs.phalanx.io/status"}, {"code", 429},
         {"retryAfterSeconds", 1}, {"count", 3}}}},
      {"operator-status-reset-after-apply",
       {{{"client", "phalanx-operator"}, {"resource", "trainingjobs.phalanx.io/status"}, {"kind", "reset"},
         {"afterApply", true}, {"count", 3}}}},
      {"extender-patch-pods-503",
       {{{"client", "phalanx-extender"}, {"verb", "patch"}, {"resource", "pods"}, {"code", 503}, {"count", 2}}}},
      {"extender-bind-500",
       {{{"client", "phalanx-extender"}, {"resource", "pods/binding"}, {"code", 500}, {"count", 1}}}},
      {"extender-bind-reset-after-apply",
       {{{"client", "phalanx-extender"}, {"resource", "pods/binding"}, {"kind", "reset"}, {"afterApply", true},
         {"count", 1}}}},
      {"extender-patch-pods-timeout",
       {{{"client", "phalanx-extender"}, {"verb", "patch"}, {"resource", "pods"}, {"kind", "timeout"},
         {"delayMs", 200}, {"count", 1}}}},
      {"extender-patch-pods-500",
       {{{"client", "phalanx-extender"}, {"verb", "patch"}, {"resource", "pods"}, {"code", 500}, {"count", 2}}}},
      {"extender-bind-timeout-after-apply",
       {{{"client", "phalanx-extender"}, {"resource", "pods/binding"}, {"kind", "timeout"}, {"afterApply", true},
         {"count", 1}}}},
      {"extender-evict-timeout-after-apply",
       {{{"client", "phalanx-extender"}, {"resource", "pods/eviction"}, {"kind", "timeout"}, {"afterApply", true},
         {"count", 1}}}},
      // Its own Lease (namespace ml; kube-scheduler's, which it also reads, is in kube-system): two
      // failed renewals at the 500 ms retry period stay inside the 2 s renew deadline, so the leader
      // keeps its lease. The old rule (six faults on any Lease) passed in the normal build, but in the
      // ASan build the six hit consecutive renewals: more than 2 s without one, and a leader that
      // cannot renew rightly gives its lease up and exits, which this cell counts as a failure.
      {"extender-leases-503",
       {{{"client", "phalanx-extender"}, {"resource", "leases.coordination.k8s.io"}, {"namespace", "ml"},
         {"code", 503}, {"count", 2}}}},
      {"operator-patch-pods-reset-after-apply",
       {{{"client", "phalanx-operator"}, {"verb", "patch"}, {"resource", "pods"}, {"kind", "reset"},
         {"afterApply", true}, {"count", 2}}}},
      // The device plugin writes its Node only when a GPU's state changes (not in this lifecycle):
      // its watch goes Gone and its relists fail.
      {"device-plugin-relist-500",
       {{{"client", "phalanx-device-plugin"}, {"verb", "watch"}, {"kind", "watch-gone"}, {"count", 1}},
        {{"client", "phalanx-device-plugin"}, {"verb", "list"}, {"code", 500}, {"count", 2}}},
       true},
      {"watch-gone",
       {{{"client", kDaemons}, {"verb", "watch"}, {"kind", "watch-gone"}, {"count", 4}}},
       true, kWatchLagSlack},
      {"watch-closed-silently",
       {{{"client", kDaemons}, {"verb", "watch"}, {"kind", "watch-close"}, {"count", 6}}},
       true, kWatchLagSlack},
      {"watch-stalled",
       {{{"client", kDaemons}, {"verb", "watch"}, {"resource", "pods"}, {"kind", "watch-stall"},
         {"delayMs", 2000}, {"count", 3}}},
       true, kWatchLagSlack},
      {"slow-responses",
       {{{"client", kDaemons}, {"kind", "slow"}, {"delayMs", 150}, {"count", -1}}}},
      {"random-500-and-429",
       {{{"client", kDaemons}, {"verb", "create"}, {"code", 500}, {"probability", 0.15}, {"seed", 27}, {"count", -1}},
        {{"client", kDaemons}, {"verb", "patch"}, {"code", 429}, {"retryAfterSeconds", 1}, {"probability", 0.15},
         {"seed", 28}, {"count", -1}},
        {{"client", kDaemons}, {"verb", "list"}, {"code", 500}, {"probability", 0.5}, {"seed", 29}, {"count", -1}},
        {{"client", kDaemons}, {"verb", "watch"}, {"kind", "watch-gone"}, {"count", 8}}},
       true, kWatchLagSlack},
  };
}

// Runs the lifecycle of job `name` on `cluster` under `cell`'s faults and checks the invariants.
// `pids`: the daemons' processes when the cluster started.
void RunCell(Cluster& cluster, const std::vector<pid_t>& pids, const FaultCell& cell, const std::string& name);

std::vector<pid_t> DaemonPids(Cluster& cluster) {
  std::vector<pid_t> pids;
  for (Process* p : {cluster.operator_process(), cluster.extender_process()}) pids.push_back(p->Running() ? p->pid() : -1);
  for (const char* node : {"node-a", "node-b"}) {
    pids.push_back(cluster.device_plugin(node).Running() ? cluster.device_plugin(node).pid() : -1);
  }
  return pids;
}

// After a failed cell: the job and the critical pod go, so the next cell starts on free GPUs.
void CleanUp(Cluster& cluster, const std::string& name) {
  auto& client = cluster.client();
  (void)client.Delete(kTrainingJobs, cluster.ns(), name);
  (void)client.Delete(kPods, cluster.ns(), "crit-" + name);
  PollUntil([&] {
    return ListPods(client, cluster.ns(), "phalanx.io/job-name=" + name).empty() &&
           IsNotFound(client.Get(kPods, cluster.ns(), "crit-" + name).status());
  }, std::chrono::seconds(30));
}

void RunCell(Cluster& cluster, const std::vector<pid_t>& pids, const FaultCell& cell, const std::string& name) {
  RawClient control(cluster.api_url());

  std::vector<std::string> rule_names;
  for (size_t i = 0; i < cell.rules.size(); ++i) {
    Json rule = cell.rules[i];
    rule["name"] = fmt::format("{}-{}", cell.name, i);
    rule_names.push_back(rule["name"]);
    ASSERT_EQ(control.Post("/fake/faults", rule).status, 200) << rule.dump();
  }
  if (cell.drop_watches) {
    ASSERT_EQ(control.Post("/fake/drop-watches", Json::object()).status, 200);
  }
  struct ClearFaults {
    RawClient& control;
    ~ClearFaults() { control.Send("DELETE", "/fake/faults"); }
  } clear{control};

  bool completed = false;
  RunGangLifecycle(cluster, name, [] {}, &completed, cell.usage_slack);
  if (!completed) return;

  // Every fault really happened: each rule that always fires did, and some random one did (a
  // relist after backoff may come just after the lifecycle).
  Json state;
  PollUntil([&] {
    state = control.Get("/fake/faults").Json();
    for (size_t i = 0; i < rule_names.size(); ++i) {
      if (cell.rules[i].value("probability", 1.0) >= 1.0 && state["fired"].value(rule_names[i], 0) == 0) return false;
    }
    return true;
  }, std::chrono::seconds(10));
  uint64_t fired_in_cell = 0;
  for (size_t i = 0; i < rule_names.size(); ++i) {
    const uint64_t fired = state["fired"].value(rule_names[i], uint64_t{0});
    fired_in_cell += fired;
    if (cell.rules[i].value("probability", 1.0) >= 1.0) {
      EXPECT_GE(fired, 1u) << "fault " << rule_names[i] << " never fired: " << state.dump();
    }
  }
  EXPECT_GE(fired_in_cell, 1u) << "no fault of the cell fired: " << state.dump();

  // The daemons are the ones started with the cluster, all still running.
  EXPECT_EQ(DaemonPids(cluster), pids) << "a daemon died or restarted" << cluster.Diagnostics();
}

int FailureCount() {
  const ::testing::TestResult* result = ::testing::UnitTest::GetInstance()->current_test_info()->result();
  int failures = 0;
  for (int i = 0; i < result->total_part_count(); ++i) failures += result->GetTestPartResult(i).failed() ? 1 : 0;
  return failures;
}

// Cells by name (comma-separated) from PHALANX_FAULT_CELLS, to rerun a few; all by default.
std::vector<FaultCell> SelectedCells() {
  const char* only = std::getenv("PHALANX_FAULT_CELLS");
  std::vector<FaultCell> out;
  for (auto& cell : Cells()) {
    if (only == nullptr || ("," + std::string(only) + ",").find("," + cell.name + ",") != std::string::npos) {
      out.push_back(std::move(cell));
    }
  }
  return out;
}

// One test, one process, one cluster for every cell (gtest_discover_tests would start a cluster
// per TEST_P instance, and recovery across cells is part of what is tested).
TEST(E2eFaultMatrix, GangLifecycleKeepsItsInvariantsUnderEveryFault) {
  auto cluster = StartCluster({.nodes = {{"node-a"}, {"node-b"}}});
  ASSERT_TRUE(cluster);
  const std::vector<pid_t> pids = DaemonPids(*cluster);
  int index = 0;
  for (const FaultCell& cell : SelectedCells()) {
    SCOPED_TRACE("fault cell " + cell.name);
    const std::string name = fmt::format("f{}", ++index);  // short: pods are <job>-a<N>-<rank>
    const auto started = std::chrono::steady_clock::now();
    const int failures_before = FailureCount();
    RunCell(*cluster, pids, cell, name);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    ::testing::Test::RecordProperty(cell.name, fmt::format("{:.1f}s", seconds));
    std::fprintf(stderr, "fault cell %s: %.1f s%s\n", cell.name.c_str(), seconds,
                 FailureCount() > failures_before ? " FAILED" : "");
    if (FailureCount() > failures_before) CleanUp(*cluster, name);
  }
}

}  // namespace
}  // namespace phalanx::e2e
