// Idle victims first in the daemon (TierPolicy::idle_victims_first, issue 18): the extender
// tells the engine a gang is idle when every member carries phalanx.io/idle-since (written
// by the device plugin), and the engine then takes it before a busy victim.
#include <gtest/gtest.h>

#include "tests/unit/extender/test_cluster.h"

namespace phalanx::extender {
namespace {

using namespace testing;  // NOLINT
using namespace std::chrono_literals;

TEST(IdleVictimsTest, TheIdleSinceAnnotationIsParsedAndABrokenOneMeansBusy) {
  json::Json pod = {{"metadata", {{"name", "p"}, {"namespace", "ml"}, {"uid", "u1"},
                                  {"annotations", {{"phalanx.io/idle-since", "2026-11-22T01:45:56Z"}}}}},
                    {"spec", json::Json::object()}};
  auto parsed = ParsePod(pod);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_TRUE(parsed->idle_since.has_value());
  EXPECT_EQ(FormatRfc3339(*parsed->idle_since), "2026-11-22T01:45:56Z");
  pod["metadata"]["annotations"]["phalanx.io/idle-since"] = "yesterday";
  parsed = ParsePod(pod);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_FALSE(parsed->idle_since.has_value());
}

// Two running 8-GPU spot gangs; "idle" started an hour earlier (more work at risk: the
// costlier victim by the price rules) and carries phalanx.io/idle-since. A high gang needs
// one node. Returns the pods evicted.
std::vector<std::string> Evicted(bool idle_victims_first) {
  ExtenderConfig config = DefaultConfig();
  for (scheduling::TierPolicy& t : config.scheduling.tiers)
    if (t.name == "spot") t.idle_victims_first = idle_victims_first;
  TestCluster c(config);
  for (const std::string n : {"dgx-0", "dgx-1"}) EXPECT_TRUE(c.ext.OnNode(DgxNode(n)).ok());
  const std::string names[] = {"busy", "idle"};
  for (int i = 0; i < 2; ++i) {
    PodInfo p = GangPod(names[i], 0, 8, 1, /*priority=*/100);
    p.gated = false;
    p.node_name = i == 0 ? "dgx-0" : "dgx-1";
    p.phase = PodPhase::kRunning;
    p.start_time = c.clock.WallNow() - (i == 1 ? 1h : 0h);
    if (i == 1) p.idle_since = c.clock.WallNow() - 40min;
    c.ext.OnPod(p);
  }
  c.ext.Tick();  // the engine adopts both running gangs
  c.clock.Advance(10min);
  c.ext.OnPod(GangPod("urgent", 0, 8, 1, /*priority=*/10000));
  c.ext.Tick();
  c.ext.DrainForTest();
  std::vector<std::string> out;
  for (const auto& call : c.writer.CallsOf("evict")) out.push_back(call.target);
  for (const auto& call : c.writer.CallsOf("preempt-request")) out.push_back(call.target);
  return out;
}

TEST(IdleVictimsTest, AnIdleSpotGangIsEvictedFirstOnlyWhenTheTierSetsIt) {
  EXPECT_EQ(Evicted(true), std::vector<std::string>{"default/idle-0"});
  EXPECT_EQ(Evicted(false), std::vector<std::string>{"default/busy-0"});  // off: the cheaper victim
}


// The same rule in kube-scheduler's cycle: a high 8-GPU pod (not a gang) is offered both spot
// pods; the verb answers with the idle one only when the tier sets idleVictimsFirst.
std::vector<std::string> VerbChoice(bool idle_victims_first) {
  ExtenderConfig config = DefaultConfig();
  for (scheduling::TierPolicy& t : config.scheduling.tiers)
    if (t.name == "spot") t.idle_victims_first = idle_victims_first;
  TestCluster c(config);
  std::map<std::string, std::vector<std::string>> offered;
  const std::string names[] = {"busy", "idle"};
  for (int i = 0; i < 2; ++i) {
    const std::string node = i == 0 ? "dgx-0" : "dgx-1";
    EXPECT_TRUE(c.ext.OnNode(DgxNode(node)).ok());
    PodInfo p = GangPod(names[i], 0, 8, 1, /*priority=*/100);
    p.gated = false;
    p.node_name = node;
    p.phase = PodPhase::kRunning;
    p.start_time = c.clock.WallNow() - (i == 1 ? 1h : 0h);
    if (i == 1) p.idle_since = c.clock.WallNow() - 40min;
    c.ext.OnPod(p);
    offered[node] = {p.uid.str()};
  }
  c.ext.Tick();
  c.clock.Advance(10min);
  PreemptArgs args;
  args.pod = GpuPod("urgent", 8, /*priority=*/10000);
  args.victims = offered;
  PreemptResult r = c.ext.Preempt(args);
  std::vector<std::string> out;
  for (const auto& [node, uids] : r.victims) out.push_back(node);
  return out;
}

TEST(IdleVictimsTest, ThePreemptVerbOffersTheIdleSpotPodFirstOnlyWhenTheTierSetsIt) {
  EXPECT_EQ(VerbChoice(true), std::vector<std::string>{"dgx-1"});
  EXPECT_EQ(VerbChoice(false), std::vector<std::string>{"dgx-0"});  // off: the cheaper victim
}

}  // namespace
}  // namespace phalanx::extender
