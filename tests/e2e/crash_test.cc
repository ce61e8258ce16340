// Issue 27 §4: a daemon killed (SIGKILL) anywhere in the gang commit or the operator's restart
// sequence, and started again, leaves the same invariants as the fault matrix (gang_lifecycle.h).
// Crash points are exact: a fault rule on the fake API server holds the daemon's N-th write of a
// kind (before it is applied, or after it was committed with its answer lost), the test kills
// the daemon while that write is in flight, clears the rule and starts the daemon again; the
// lifecycle then has to complete with the new process. One cluster for every point.
// The device plugins write nothing on the gang's path (their node annotations change with health,
// not with allocations): they are killed while the gang runs on their GPUs instead, and every later
// step (the critical pod's and attempt 2's Allocate) goes through the restarted plugin.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tests/e2e/gang_lifecycle.h"
#include "tests/fakes/apiserver/raw_client.h"

namespace phalanx::e2e {
namespace {

using fakes::apiserver::testing::RawClient;
using kube::Json;

struct CrashPoint {
  std::string daemon;  // "operator" or "extender"
  std::string path;    // which writes are counted: a substring of their path
  int write = 1;       // the daemon is killed during its N-th such write of the lifecycle
  bool applied = false;  // that write was committed (its answer lost) before the kill
  std::string Name() const {
    std::string p;
    for (char c : path) {
      if (std::isalnum(static_cast<unsigned char>(c))) p += c;
    }
    return fmt::format("{}-{}-write{}-{}", daemon, p, write, applied ? "applied" : "pending");
  }
};

// The operator's pod writes (create, finalizer patches) and status writes, and the extender's pod
// writes (devices and ungate patches, Bindings, evictions), at the 1st, 2nd, 3rd, 5th and 8th.
std::vector<CrashPoint> Points() {
  std::vector<CrashPoint> out;
  for (int n : {1, 2, 3, 5, 8}) {
    out.push_back({"operator", "/pods", n, n % 2 == 0});
    out.push_back({"operator", "/trainingjobs/", n, n % 2 == 1});
    out.push_back({"extender", "/pods/", n, n % 2 == 0});
  }
  return out;
}

TEST(E2eCrash, ADaemonKilledDuringAnyWriteOfTheGangLifecycleLeavesItsInvariants) {
  auto cluster = StartCluster({.nodes = {{"node-a"}, {"node-b"}}});
  ASSERT_TRUE(cluster);
  RawClient control(cluster->api_url());
  int index = 0, crashed = 0;
  for (const CrashPoint& point : Points()) {
    SCOPED_TRACE("crash point " + point.Name());
    const std::string name = fmt::format("c{}", ++index);
    const std::string rule = point.Name();
    ASSERT_EQ(control.Post("/fake/faults",
                           Json{{"name", rule},
                                {"client", "phalanx-" + point.daemon},
                                {"verb", "write"},
                                {"pathContains", point.path},
                                {"after", point.write - 1},
                                {"count", 1},
                                {"kind", "timeout"},
                                {"delayMs", 600000},  // held until the daemon is gone
                                {"afterApply", point.applied}})
                  .status,
              200);
    bool killed = false;
    Status restarted;
    auto crash_when_held = [&] {
      if (killed || control.Get("/fake/faults").Json()["fired"].value(rule, 0) == 0) return;
      killed = true;
      control.Send("DELETE", "/fake/faults");
      Process* daemon = point.daemon == "operator" ? cluster->operator_process() : cluster->extender_process();
      const pid_t before = daemon->pid();
      restarted = point.daemon == "operator" ? cluster->RestartOperator() : cluster->RestartExtender();
      daemon = point.daemon == "operator" ? cluster->operator_process() : cluster->extender_process();
      EXPECT_TRUE(daemon != nullptr && daemon->pid() != before) << "not restarted";
    };
    const auto started = std::chrono::steady_clock::now();
    bool completed = false;
    RunGangLifecycle(*cluster, name, crash_when_held, &completed);
    control.Send("DELETE", "/fake/faults");
    EXPECT_TRUE(restarted.ok()) << restarted << cluster->Diagnostics();
    crashed += killed;
    std::fprintf(stderr, "crash point %s: %s, %.1f s%s\n", rule.c_str(), killed ? "killed" : "write never reached",
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(),
                 completed ? "" : " FAILED");
    if (!completed) break;  // the cluster is in an unknown state: later points would only echo it
  }
  // Most points are reached (a late write number may not exist in one lifecycle).
  EXPECT_GE(crashed, 9) << "too few crash points were reached";

  // The device plugins: node-a's, then both, SIGKILLed once attempt 1 runs on them. A plugin killed
  // during a kubelet Allocate fails that pod's admission, as on a real kubelet (a second disruption
  // of the job, not an invariant broken), so the kill waits for the gang to be running.
  for (const std::vector<std::string>& nodes : {std::vector<std::string>{"node-a"},
                                                std::vector<std::string>{"node-a", "node-b"}}) {
    const std::string name = fmt::format("c{}", ++index);
    SCOPED_TRACE("device plugins of " + fmt::format("{}", fmt::join(nodes, ",")) + " killed while attempt 1 runs");
    std::vector<pid_t> before;
    for (const auto& node : nodes) before.push_back(cluster->device_plugin(node).pid());
    bool killed = false;
    Status restarted;
    auto crash_when_running = [&] {
      if (killed) return;
      const auto pods = ListPods(cluster->client(), cluster->ns(),
                                 "phalanx.io/job-name=" + name + ",phalanx.io/attempt=1");
      if (pods.size() != 2 ||
          !std::all_of(pods.begin(), pods.end(), [](const Json& p) { return Phase(p) == "Running"; })) {
        return;
      }
      killed = true;
      for (const auto& node : nodes) {
        if (Status s = cluster->RestartDevicePlugin(node); !s.ok()) restarted = s;
      }
    };
    bool completed = false;
    RunGangLifecycle(*cluster, name, crash_when_running, &completed);
    EXPECT_TRUE(killed) << "attempt 1 never seen running";
    EXPECT_TRUE(restarted.ok()) << restarted << cluster->Diagnostics();
    for (size_t i = 0; i < nodes.size(); ++i) {
      EXPECT_NE(cluster->device_plugin(nodes[i]).pid(), before[i]) << nodes[i] << "'s plugin not restarted";
    }
    std::fprintf(stderr, "device plugins of %s killed while attempt 1 ran: %s\n", fmt::format("{}", fmt::join(nodes, ",")).c_str(),
                 completed ? "lifecycle completed" : "FAILED");
    if (!completed) break;
  }
}

}  // namespace
}  // namespace phalanx::e2e
