// Gang scheduling: admission, pinning, the bind barrier (all-or-nothing), timeouts,
// ordering without deadlock, topology levels, reservations, restart recovery.
#include <algorithm>
#include <set>

#include <gtest/gtest.h>

#include "tests/unit/extender/test_cluster.h"

namespace phalanx::extender::testing {
namespace {

using namespace std::chrono_literals;

std::vector<std::string> TwoDgx() { return {"dgx-0", "dgx-1"}; }

// Admits the gang via Tick and returns the node each member is pinned to by filter.
std::vector<std::string> AdmitAndFilter(TestCluster& c, const std::vector<PodInfo>& members,
                                        const std::vector<std::string>& nodes) {
  c.ext.Tick();
  std::vector<std::string> pinned;
  for (const PodInfo& p : members) {
    PodInfo ungated = p;
    ungated.gated = false;
    c.ext.OnPod(ungated);  // the informer sees the gate lifted
    FilterResult r = c.ext.Filter(Args(ungated, nodes));
    EXPECT_EQ(r.passed.size(), 1u) << p.name << ": " << (r.failed.empty() ? "" : r.failed[0].second);
    pinned.push_back(r.passed.empty() ? "" : std::string(r.passed[0]));
  }
  return pinned;
}

struct Gang8 {
  TestCluster c;
  std::vector<PodInfo> members;
  std::vector<std::string> pinned;
  Gang8() {
    for (const auto& n : TwoDgx()) EXPECT_TRUE(c.ext.OnNode(DgxNode(n)).ok());
    for (int i = 0; i < 8; ++i) {
      members.push_back(GangPod("train", i, 2, 8));
      c.ext.OnPod(members.back());
    }
    pinned = AdmitAndFilter(c, members, TwoDgx());
  }
};

TEST(GangTest, AdmissionLiftsEveryGateTogetherAndPinsMembers) {
  Gang8 g;
  g.c.ext.DrainForTest();
  EXPECT_EQ(g.c.writer.CallsOf("ungate").size(), 8u);
  std::map<std::string, int> per_node;
  for (const auto& n : g.pinned) per_node[n]++;
  EXPECT_EQ(per_node["dgx-0"], 4);  // 8 members x 2 GPUs on two 8-GPU nodes
  EXPECT_EQ(per_node["dgx-1"], 4);
}

TEST(GangTest, SevenHeldBindsWaitAndTheEighthReleasesAll) {
  Gang8 g;
  std::vector<BindProbe> probes(8);
  for (int i = 0; i < 7; ++i) g.c.ext.Bind(BindOf(g.members[i], g.pinned[i]), probes[i].Callback());
  g.c.ext.DrainForTest();
  EXPECT_EQ(g.c.ext.HeldBinds(), 7u);
  for (int i = 0; i < 7; ++i) EXPECT_FALSE(probes[i].Done()) << i;
  EXPECT_TRUE(g.c.writer.CallsOf("bind").empty());
  EXPECT_TRUE(g.c.writer.CallsOf("devices").empty());

  g.c.ext.Bind(BindOf(g.members[7], g.pinned[7]), probes[7].Callback());
  for (auto& p : probes) EXPECT_EQ(p.Wait(), "");
  EXPECT_EQ(g.c.ext.HeldBinds(), 0u);
  g.c.ext.DrainForTest();  // the gate lifts ran on other pool threads
  const auto calls = g.c.writer.calls();
  ASSERT_EQ(calls.size(), 8u + 8u + 8u);  // ungate, devices, bind
  // Commit point first: every member's devices are written before any Binding.
  auto first_bind = std::find_if(calls.begin(), calls.end(), [](auto& c) { return c.verb == "bind"; });
  auto last_devices = std::find_if(calls.rbegin(), calls.rend(), [](auto& c) { return c.verb == "devices"; });
  EXPECT_LT(last_devices.base() - calls.begin(), first_bind - calls.begin() + 1);
  // Devices are two distinct GPUs of the member's node.
  std::set<std::string> all_ids;
  for (const auto& call : g.c.writer.CallsOf("devices")) {
    auto parsed = ParseDeviceAssignment(call.value);
    ASSERT_TRUE(parsed.ok());
    ASSERT_EQ(parsed->at("main").size(), 2u);
    for (const auto& id : parsed->at("main")) EXPECT_TRUE(all_ids.insert(id).second) << id;
  }
  EXPECT_EQ(g.c.ext.StateJson()["cluster"]["freeGpus"], 0);
}

TEST(GangTest, MissingEighthTimesOutAllSevenAndLeavesNothingBound) {
  Gang8 g;
  std::vector<BindProbe> probes(7);
  for (int i = 0; i < 7; ++i) g.c.ext.Bind(BindOf(g.members[i], g.pinned[i]), probes[i].Callback());
  g.c.clock.Advance(19s);  // barrier = min(120 s, httpTimeout 30 s - 10 s) = 20 s
  g.c.ext.Tick();
  g.c.ext.DrainForTest();
  for (auto& p : probes) EXPECT_FALSE(p.Done());
  g.c.clock.Advance(2s);
  g.c.ext.Tick();
  for (auto& p : probes) EXPECT_NE(p.Wait().find("timed out at the bind barrier"), std::string::npos);
  EXPECT_TRUE(g.c.writer.CallsOf("bind").empty());
  EXPECT_TRUE(g.c.writer.CallsOf("devices").empty());
  const auto state = g.c.ext.StateJson();
  EXPECT_EQ(state["cluster"]["freeGpus"], 16);  // the plan's reservation is gone
  EXPECT_EQ(g.c.ext.HeldBinds(), 0u);
  // A late eighth bind finds no plan and fails too.
  BindProbe late;
  g.c.ext.Bind(BindOf(g.members[7], g.pinned[7]), late.Callback());
  EXPECT_NE(late.Wait().find("no admitted plan"), std::string::npos);
}

TEST(GangTest, TwoGangsThatFitOnlyOneAtATimeNeverDeadlock) {
  TestCluster c;
  for (const auto& n : TwoDgx()) ASSERT_TRUE(c.ext.OnNode(DgxNode(n)).ok());
  std::vector<PodInfo> a, b;
  for (int i = 0; i < 2; ++i) {
    a.push_back(GangPod("a", i, 8, 2, 1000));
    c.ext.OnPod(a.back());
  }
  c.clock.Advance(1s);
  for (int i = 0; i < 2; ++i) {
    b.push_back(GangPod("b", i, 8, 2, 1000));
    c.ext.OnPod(b.back());
  }
  c.ext.Tick();
  c.ext.Tick();
  auto state = c.ext.StateJson();
  int planned = 0;
  for (const auto& gang : state["gangs"]) planned += gang.contains("plan") ? 1 : 0;
  EXPECT_EQ(planned, 1);  // never two half-placed gangs
  // Gang a (first in FIFO) has the plan; b waits with nothing reserved.
  EXPECT_NE(c.ext.Explain("default/a-0").find("admitted: planned"), std::string::npos) << c.ext.Explain("default/a-0");
  EXPECT_NE(c.ext.Explain("default/b-0").find("not admitted"), std::string::npos);
  auto pinned = AdmitAndFilter(c, a, TwoDgx());
  std::vector<BindProbe> probes(2);
  for (int i = 0; i < 2; ++i) c.ext.Bind(BindOf(a[i], pinned[i]), probes[i].Callback());
  for (auto& p : probes) EXPECT_EQ(p.Wait(), "");
  // a finishes; b is admitted next.
  for (const auto& p : a) c.ext.OnPodDeleted(p.uid);
  c.ext.Tick();
  EXPECT_NE(c.ext.Explain("default/b-1").find("admitted: planned on 2 node(s)"), std::string::npos)
      << c.ext.Explain("default/b-1");
}

TEST(GangTest, RackRequiredGangNeverSplitsAcrossRacks) {
  TestCluster c;
  for (auto [node, rack] : std::vector<std::pair<std::string, std::string>>{
           {"n0", "r0"}, {"n1", "r0"}, {"n2", "r1"}, {"n3", "r1"}}) {
    ASSERT_TRUE(c.ext.OnNode(DgxNode(node, rack)).ok());
  }
  // 4 GPUs busy in each rack: 12 free per rack, 24 in total.
  c.ext.OnPod(GpuPod("busy0", 4, 0, "n0"));
  c.ext.OnPod(GpuPod("busy2", 4, 0, "n2"));
  auto make = [&](const std::string& gang, int members) {
    for (int i = 0; i < members; ++i) {
      PodInfo p = GangPod(gang, i, 4, members);
      p.topology_level = "topology.kubernetes.io/rack";
      p.topology_required = true;
      c.ext.OnPod(p);
    }
  };
  make("big", 4);  // 16 GPUs: fits the cluster, but no rack
  c.ext.Tick();
  EXPECT_NE(c.ext.Explain("default/big-0").find("not admitted"), std::string::npos);
  EXPECT_EQ(c.ext.StateJson()["cluster"]["freeGpus"], 24);  // nothing reserved
  for (int i = 0; i < 4; ++i) c.ext.OnPodDeleted(PodUid("uid-big-" + std::to_string(i)));
  make("fit", 3);  // 12 GPUs: exactly one rack
  c.ext.Tick();
  const auto state = c.ext.StateJson();
  std::set<std::string> racks;
  for (const auto& gang : state["gangs"]) {
    if (gang["gang"] != "default/fit") continue;
    ASSERT_TRUE(gang.contains("plan"));
    for (const auto& m : gang["plan"]["members"]) {
      const std::string node = m["node"];
      racks.insert(node == "n0" || node == "n1" ? "r0" : "r1");
    }
  }
  EXPECT_EQ(racks.size(), 1u);
}

TEST(GangTest, ReservedGpusAreNeverOfferedToOtherPods) {
  Gang8 g;  // the plan reserves all 16 GPUs
  FilterResult r = g.c.ext.Filter(Args(GpuPod("intruder", 1, 1000000), TwoDgx()));
  EXPECT_TRUE(r.passed.empty());
  ASSERT_EQ(r.unresolvable.size(), 2u);  // preemption cannot free a reservation
  EXPECT_TRUE(r.failed.empty());
}

// kube-scheduler nominated a higher-priority pod to dgx-0 after preempting for it: a
// lower-priority gang must not be planned onto the GPU it waits for (found by the e2e
// suite: the gang took it, the preemptor stalled behind a lower tier).
TEST(GangTest, GpusOfANominatedHigherPriorityPodAreNotPlanned) {
  TestCluster c;
  for (const auto& n : TwoDgx()) ASSERT_TRUE(c.ext.OnNode(DgxNode(n)).ok());
  PodInfo critical = GpuPod("critical", 1, 1000000);
  critical.nominated_node = "dgx-0";
  c.ext.OnPod(critical);
  std::vector<PodInfo> members;
  for (int i = 0; i < 2; ++i) {
    members.push_back(GangPod("train", i, 8, 2, /*priority=*/100));
    c.ext.OnPod(members.back());
  }
  c.ext.Tick();
  c.ext.DrainForTest();
  EXPECT_TRUE(c.writer.CallsOf("ungate").empty()) << "16 GPUs needed, 15 not spoken for";
  // The nominated pod itself still sees its GPU free on dgx-0.
  FilterResult r = c.ext.Filter(Args(critical, {"dgx-0"}));
  EXPECT_EQ(r.passed.size(), 1u);

  // A nomination does not hold GPUs against a higher priority gang.
  TestCluster c2;
  for (const auto& n : TwoDgx()) ASSERT_TRUE(c2.ext.OnNode(DgxNode(n)).ok());
  PodInfo low = GpuPod("low", 1, 10);
  low.nominated_node = "dgx-0";
  c2.ext.OnPod(low);
  for (int i = 0; i < 2; ++i) c2.ext.OnPod(GangPod("train", i, 8, 2, /*priority=*/100));
  c2.ext.Tick();
  c2.ext.DrainForTest();
  EXPECT_EQ(c2.writer.CallsOf("ungate").size(), 2u);

  // The preemptor is bound (or gone): the gang is admitted.
  critical.node_name = "dgx-1";
  critical.phase = PodPhase::kSucceeded;
  c.ext.OnPod(critical);
  c.ext.Tick();
  c.ext.DrainForTest();
  EXPECT_EQ(c.writer.CallsOf("ungate").size(), 2u);
}

// The scheduling engine's cost rules in the daemon (docs/algorithms.md §8.3): a gated high
// gang that does not fit preempts a whole lower-tier gang, waits for its pods to go, then is
// admitted on their GPUs.
TEST(GangTest, AGatedHighGangPreemptsAWholeSpotGangThenIsAdmitted) {
  TestCluster c;
  for (const auto& n : TwoDgx()) ASSERT_TRUE(c.ext.OnNode(DgxNode(n)).ok());
  std::vector<PodInfo> spot;
  for (int i = 0; i < 2; ++i) {
    PodInfo p = GangPod("spot", i, 8, 2, /*priority=*/100);
    p.gated = false;
    p.node_name = TwoDgx()[static_cast<size_t>(i)];
    p.phase = PodPhase::kRunning;
    p.start_time = c.clock.WallNow();
    spot.push_back(p);
    c.ext.OnPod(p);
  }
  c.ext.Tick();  // the engine adopts the running spot gang
  EXPECT_NE(c.ext.Explain("default/spot-0").find("as a preemption victim (tier spot): preemptible now (preempted 0/1 today"),
            std::string::npos)
      << c.ext.Explain("default/spot-0");
  c.clock.Advance(10min);
  std::vector<PodInfo> high;
  for (int i = 0; i < 2; ++i) {
    high.push_back(GangPod("urgent", i, 8, 2, /*priority=*/10000));
    c.ext.OnPod(high.back());
  }
  c.ext.Tick();
  c.ext.DrainForTest();
  // Both spot members evicted (the whole gang), nothing admitted yet.
  EXPECT_EQ(c.writer.CallsOf("evict").size(), 2u);
  EXPECT_TRUE(c.writer.CallsOf("ungate").empty());
  EXPECT_NE(c.ext.Explain("default/urgent-0").find("to checkpoint and stop"), std::string::npos)
      << c.ext.Explain("default/urgent-0");
  // A second tick evicts nobody else while the victims terminate.
  c.ext.Tick();
  c.ext.DrainForTest();
  EXPECT_EQ(c.writer.CallsOf("evict").size(), 2u);
  // The victims are gone: the high gang is admitted on their GPUs.
  for (const PodInfo& p : spot) c.ext.OnPodDeleted(p.uid);
  c.clock.Advance(1s);
  c.ext.Tick();
  c.ext.DrainForTest();
  EXPECT_EQ(c.writer.CallsOf("ungate").size(), 2u);
  EXPECT_NE(c.ext.Explain("default/urgent-1").find("admitted: planned on 2 node(s)"), std::string::npos)
      << c.ext.Explain("default/urgent-1");
}

// A gated high gang that cannot fit and may not preempt (the GPUs are held by its own tier)
// holds its pool's head: /debug/state and explain show its expected start, which comes from
// the running gang's expected end (the high tier's default run time, 4 h, from its start),
// once it waited the hour after which the high tier reserves (issue 25).
TEST(GangTest, AWaitingHighGangIsItsPoolsHeadWithAnExpectedStart) {
  TestCluster c;
  for (const auto& n : TwoDgx()) ASSERT_TRUE(c.ext.OnNode(DgxNode(n)).ok());
  for (int i = 0; i < 2; ++i) {
    PodInfo p = GangPod("running", i, 8, 2, /*priority=*/10000);
    p.gated = false;
    p.node_name = TwoDgx()[static_cast<size_t>(i)];
    p.phase = PodPhase::kRunning;
    c.ext.OnPod(p);
  }
  c.ext.Tick();  // adopted: expected to end 4 h after it was first seen
  c.clock.Advance(1h);
  for (int i = 0; i < 2; ++i) c.ext.OnPod(GangPod("next", i, 8, 2, /*priority=*/10000));
  c.ext.Tick();
  EXPECT_TRUE(c.ext.StateJson()["heads"].empty()) << c.ext.StateJson()["heads"].dump();
  c.clock.Advance(1h);
  c.ext.Tick();
  const auto heads = c.ext.StateJson()["heads"];
  ASSERT_EQ(heads.size(), 1u) << heads.dump();
  EXPECT_EQ(heads[0]["gang"], "default/next");
  EXPECT_EQ(heads[0]["pool"], "H100");
  EXPECT_NEAR(heads[0]["expectedStartInSeconds"].get<double>(), 2 * 3600, 1);
  EXPECT_NE(c.ext.Explain("default/next-0").find("head of pool H100: needs 2 x 8 GPUs, 0 free; expected start in 2.0h"),
            std::string::npos)
      << c.ext.Explain("default/next-0");
  c.ext.DrainForTest();
  EXPECT_TRUE(c.writer.CallsOf("evict").empty());  // the same tier is never a victim
}

TEST(GangTest, UngatedGangIsPlannedOnFirstMemberFilter) {
  TestCluster c;
  for (const auto& n : TwoDgx()) ASSERT_TRUE(c.ext.OnNode(DgxNode(n)).ok());
  std::vector<PodInfo> members;
  for (int i = 0; i < 3; ++i) {
    PodInfo p = GangPod("hand", i, 4, 0);  // hand-made: no min-members annotation
    p.gated = false;
    members.push_back(p);
    c.ext.OnPod(p);
  }
  FilterResult early = c.ext.Filter(Args(members[0], TwoDgx()));
  EXPECT_TRUE(early.passed.empty());
  ASSERT_FALSE(early.failed.empty());
  EXPECT_NE(early.failed[0].second.str().find("no new member appears"), std::string::npos);
  c.clock.Advance(2100ms);  // the count settles: min-members = 3
  FilterResult r = c.ext.Filter(Args(members[0], TwoDgx()));
  ASSERT_EQ(r.passed.size(), 1u);
  EXPECT_EQ(r.unresolvable.size(), 1u);
  EXPECT_EQ(c.ext.StateJson()["cluster"]["freeGpus"], 4);  // 12 reserved for the gang
}

TEST(GangTest, RestartCompletesCommittedGangAndDropsUncommittedPlans) {
  // Before the restart: a committed member (devices annotated, not bound) and an
  // uncommitted gated gang.
  TestCluster c;
  for (const auto& n : TwoDgx()) ASSERT_TRUE(c.ext.OnNode(DgxNode(n)).ok());
  PodInfo committed = GangPod("done", 0, 2, 1);
  committed.gated = false;
  committed.devices = DeviceAssignment{{"main", {"dgx-1-gpu0", "dgx-1-gpu1"}}};
  c.ext.OnPod(committed);
  c.ext.RecoverCommitted();
  c.ext.DrainForTest();
  auto binds = c.writer.CallsOf("bind");
  ASSERT_EQ(binds.size(), 1u);
  EXPECT_EQ(binds[0].target, "default/done-0");
  EXPECT_EQ(binds[0].value, "dgx-1");
  const auto state = c.ext.StateJson();
  EXPECT_EQ(state["cluster"]["freeGpus"], 14);
  bool found = false;
  for (const auto& p : state["pods"]) {
    if (p["pod"] == "default/done-0") {
      found = true;
      EXPECT_EQ(p["node"], "dgx-1");
      EXPECT_EQ(p["gpus"], json::Json::array({0, 1}));
      EXPECT_EQ(p["holding"], "committed");
    }
  }
  EXPECT_TRUE(found);
}

TEST(GangTest, NonLeaderFailsBindRetryablyAndDoesNotAdmit) {
  TestCluster c(DefaultConfig(), /*leader=*/false);
  for (const auto& n : TwoDgx()) ASSERT_TRUE(c.ext.OnNode(DgxNode(n)).ok());
  for (int i = 0; i < 2; ++i) c.ext.OnPod(GangPod("g", i, 8, 2));
  c.ext.Tick();
  EXPECT_EQ(c.ext.StateJson()["cluster"]["freeGpus"], 16);
  BindProbe probe;
  c.ext.Bind(BindOf(GangPod("g", 0, 8, 2), "dgx-0"), probe.Callback());
  EXPECT_NE(probe.Wait().find("not the active one"), std::string::npos);
  // Filter is still answered from the warm ledger.
  FilterResult r = c.ext.Filter(Args(GpuPod("solo", 1), TwoDgx()));
  EXPECT_EQ(r.passed.size(), 2u);
}

}  // namespace
}  // namespace phalanx::extender::testing
