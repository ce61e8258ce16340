// Config validation, object parsing and ledger accounting.
#include <gtest/gtest.h>

#include "extender/config.h"
#include "extender/objects/snapshot.h"
#include "extender/state/ledger.h"
#include "tests/unit/extender/test_cluster.h"

namespace phalanx::extender::testing {
namespace {

TEST(ConfigTest, DefaultsAreTheChartTiers) {
  auto c = ParseConfig("");
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_EQ(c->tiers.size(), 4u);
  EXPECT_EQ(c->tiers[0].name, "critical");
  EXPECT_TRUE(c->MayPreempt(1000000, 100));
  EXPECT_TRUE(c->MayPreempt(1000, 100));
  EXPECT_FALSE(c->MayPreempt(100, 0));  // spot preempts nobody
  EXPECT_FALSE(c->MayPreempt(1000, 1000));
  EXPECT_EQ(c->BarrierTimeout(std::chrono::seconds(120)).count(), 20);
}

TEST(ConfigTest, ParsesEveryKey) {
  auto c = ParseConfig(R"(
weights: {topology: 2, packing: 1, locality: 0.5}
tiers:
  - {name: gold, minPriority: 100, preempts: [bronze]}
  - {name: bronze, minPriority: 0}
topologyLevels: [kubernetes.io/hostname, topology.kubernetes.io/rack]
headOfLineSeconds: 60
gangTimeoutSeconds: 90
httpTimeoutSeconds: 100
memberSettleMillis: 500
planTtlSeconds: 30
pdbOverrideAfterSeconds: 600
)");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->pdb_override_after.count(), 600);
  EXPECT_EQ(DefaultConfig().pdb_override_after.count(), 60);
  EXPECT_EQ(c->weights.topology, 2);
  EXPECT_EQ(c->head_of_line.count(), 60);
  EXPECT_EQ(c->BarrierTimeout(c->gang_timeout).count(), 90);
  EXPECT_TRUE(c->MayPreempt(100, 5));
}

TEST(ConfigTest, RejectsBadFilesNamingTheKey) {
  for (auto [yaml, expect] : std::vector<std::pair<std::string, std::string>>{
           {"tiers: [{name: a, minPriority: 1, preempts: [zzz]}]", "unknown tier \"zzz\""},
           {"tiers: [{name: a, minPriority: 1}, {name: b, minPriority: 2, preempts: [a]}, ]", ""},
           {"httpTimeoutSeconds: 5", "httpTimeoutSeconds"},
           {"bogus: 1", "bogus: unknown key"},
           {"topologyLevels: [topology.kubernetes.io/rack]", "kubernetes.io/hostname"},
           {"weights: {speed: 1}", "weights.speed"},
           {"headOfLineSeconds: soon", "headOfLineSeconds"},
           {"pdbOverrideAfterSeconds: 0", "pdbOverrideAfterSeconds: must be >= 1, got 0"},
           {"pdbOverrideAfterSeconds: 86401", "pdbOverrideAfterSeconds: at most 86400"},
           {"{", "line"}}) {
    auto c = ParseConfig(yaml);
    if (expect.empty()) {
      EXPECT_TRUE(c.ok()) << yaml;  // a higher tier may preempt a lower one listed after it
      continue;
    }
    ASSERT_FALSE(c.ok()) << yaml;
    EXPECT_NE(std::string(c.status().message()).find(expect), std::string::npos) << c.status().message();
  }
}

TEST(ObjectsTest, ParsesQuantitiesTimesAndGangAlias) {
  EXPECT_EQ(*ParseCountQuantity("8"), 8);
  EXPECT_EQ(*ParseCountQuantity("2000m"), 2);
  EXPECT_FALSE(ParseCountQuantity("1500m").ok());
  EXPECT_FALSE(ParseCountQuantity("1Gi").ok());
  auto t = ParseRfc3339("2026-11-22T01:45:56Z");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(FormatRfc3339(*t), "2026-11-22T01:45:56Z");
  // SystemTime holds int64 nanoseconds: a year it cannot hold is refused, not overflowed (fuzz finding).
  EXPECT_FALSE(ParseRfc3339("1013-01-02T03:04:05Z").ok());
  EXPECT_FALSE(ParseRfc3339("9999-01-02T03:04:05Z").ok());
  auto pod = json::Parse(R"({"metadata":{"name":"p","uid":"u","labels":{"scheduling.x-k8s.io/pod-group":"pg"},
    "annotations":{"phalanx.io/gang-min-members":"4","phalanx.io/topology":"topology.kubernetes.io/rack",
    "phalanx.io/topology-mode":"required","phalanx.io/devices":"{\"c\":[\"GPU-1\"]}"},
    "ownerReferences":[{"kind":"TrainingJob","name":"job"}]},
    "spec":{"priority":1000,"schedulingGates":[{"name":"phalanx.io/gang"}],
    "containers":[{"name":"c","resources":{"requests":{"nvidia.com/gpu":"4"}}}]}})");
  ASSERT_TRUE(pod.ok());
  auto info = ParsePod(*pod);
  ASSERT_TRUE(info.ok()) << info.status().message();
  EXPECT_EQ(info->gang, "pg");
  EXPECT_EQ(info->min_members, 4);
  EXPECT_TRUE(info->topology_required);
  EXPECT_TRUE(info->gated);
  EXPECT_EQ(info->gpus, 4);
  EXPECT_EQ(info->training_job, "job");
  ASSERT_TRUE(info->devices.has_value());
  EXPECT_EQ(info->devices->at("c")[0], "GPU-1");
}

TEST(LedgerTest, NodeWithoutTopologyIsUsableByCount) {
  Ledger l(DefaultConfig().topology_levels);
  ASSERT_TRUE(l.UpsertNode(PlainNode("plain", 4)).ok());
  EXPECT_EQ(l.state().FreeGpus(), 4);
  l.UpsertPod(GpuPod("p", 3, 0, "plain"), {});
  EXPECT_EQ(l.state().FreeGpus(), 1);
  EXPECT_EQ(l.FindPod(PodUid("uid-p"))->holding, Holding::kAssumed);
}

TEST(LedgerTest, RealDevicesWinOverAssumptions) {
  Ledger l(DefaultConfig().topology_levels);
  ASSERT_TRUE(l.UpsertNode(DgxNode("n")).ok());
  l.UpsertPod(GpuPod("assumed", 1, 0, "n"), {});
  const auto first = l.FindPod(PodUid("uid-assumed"))->gpus;
  // A pod whose devices annotation names exactly the assumed GPU arrives.
  PodInfo real = GpuPod("real", 1, 0, "n");
  const int gpu = placement::GpuList(first)[0];
  real.devices = DeviceAssignment{{"main", {"n-gpu" + std::to_string(gpu)}}};
  l.UpsertPod(real, {});
  EXPECT_EQ(l.FindPod(PodUid("uid-real"))->gpus, first);
  EXPECT_EQ(l.FindPod(PodUid("uid-real"))->holding, Holding::kCommitted);
  EXPECT_NE(l.FindPod(PodUid("uid-assumed"))->gpus, first);  // moved elsewhere
  EXPECT_EQ(l.state().FreeGpus(), 6);
  ASSERT_TRUE(l.state().CheckInvariantsForTest().ok());
  // The plugin's report confirms another pod's devices.
  NodeInfo n = DgxNode("n");
  n.devices["n-gpu7"] = DeviceState{true, "uid-assumed"};
  n.devices["n-gpu6"] = DeviceState{false, ""};
  ASSERT_TRUE(l.UpsertNode(n).ok());
  EXPECT_EQ(l.FindPod(PodUid("uid-assumed"))->holding, Holding::kConfirmed);
  EXPECT_EQ(l.FindPod(PodUid("uid-assumed"))->gpus, placement::GpuMask{1} << 7);
  EXPECT_EQ(l.state().FreeGpus(), 5);  // GPU 6 is unhealthy
}

// After a kubelet restart a node may briefly report allocatable 0 (kubelet's first status before
// the device plugin registered again, issue 24 §4). The plugin's topology annotation, not
// allocatable, sizes the node: nothing is uncharged, nothing becomes free or is re-planned.
TEST(LedgerTest, AllocatableZeroAfterAKubeletRestartChangesNothingOnATopologyNode) {
  Ledger l(DefaultConfig().topology_levels);
  NodeInfo n = DgxNode("n");
  n.allocatable_gpus = 8;
  ASSERT_TRUE(l.UpsertNode(n).ok());
  l.UpsertPod(GpuPod("p", 3, 0, "n"), {});
  const auto held = l.FindPod(PodUid("uid-p"))->gpus;
  ASSERT_EQ(l.state().FreeGpus(), 5);
  n.allocatable_gpus = 0;
  ASSERT_TRUE(l.UpsertNode(n).ok());
  EXPECT_EQ(l.state().FreeGpus(), 5);
  EXPECT_EQ(l.FindPod(PodUid("uid-p"))->gpus, held);
  EXPECT_EQ(l.FindPod(PodUid("uid-p"))->holding, Holding::kAssumed);
  ASSERT_TRUE(l.state().CheckInvariantsForTest().ok());
}

TEST(LedgerTest, RebuildsTheSameLedgerWhateverTheEventOrder) {
  std::vector<NodeInfo> nodes = {DgxNode("a"), DgxNode("b"), PlainNode("c", 4)};
  std::vector<PodInfo> pods;
  for (int i = 0; i < 6; ++i) {
    PodInfo p = GpuPod("p" + std::to_string(i), 2, 0, i % 2 ? "a" : "b");
    p.devices = DeviceAssignment{{"main", {p.node_name + "-gpu" + std::to_string(2 * (i / 2)),
                                           p.node_name + "-gpu" + std::to_string(2 * (i / 2) + 1)}}};
    pods.push_back(p);
  }
  pods.push_back(GpuPod("plain", 3, 0, "c"));
  Ledger first(DefaultConfig().topology_levels);
  for (const auto& n : nodes) ASSERT_TRUE(first.UpsertNode(n).ok());
  for (const auto& p : pods) first.UpsertPod(p, {});
  Ledger second(DefaultConfig().topology_levels);  // pods before their nodes, reversed
  for (auto it = pods.rbegin(); it != pods.rend(); ++it) second.UpsertPod(*it, {});
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) ASSERT_TRUE(second.UpsertNode(*it).ok());
  EXPECT_EQ(json::Dump(first.ToJson()), json::Dump(second.ToJson()));
}

TEST(SnapshotTest, LoadsKubectlListOutput) {
  auto snap = ParseSnapshot(R"({"apiVersion":"v1","kind":"List","items":[
    {"kind":"Node","metadata":{"name":"n"},"status":{"allocatable":{"nvidia.com/gpu":"8"}}},
    {"kind":"Pod","metadata":{"name":"p","namespace":"d","uid":"u"},"spec":{"nodeName":"n","containers":[]}},
    {"kind":"Service","metadata":{"name":"s"}}]})");
  ASSERT_TRUE(snap.ok()) << snap.status().message();
  EXPECT_EQ(snap->nodes.size(), 1u);
  EXPECT_EQ(snap->nodes[0].allocatable_gpus, 8);
  EXPECT_EQ(snap->pods.size(), 1u);
  EXPECT_EQ(snap->skipped, 1);
  auto bad = ParseSnapshot(R"({"items":[{"kind":"Node","metadata":{}}]})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string(bad.status().message()).find("items[0] (Node)"), std::string::npos);
}

}  // namespace
}  // namespace phalanx::extender::testing

namespace phalanx::extender {
namespace {

TEST(ConfigSchedulingTest, TheSchedulingSectionIsTheEnginesPolicyAndBadValuesNameTheKey) {
  auto c = ParseConfig("scheduling:\n  backfill: false\n  tiers: [{name: standard, reserveAfterSeconds: 3600}]\n");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->scheduling.backfill);
  ASSERT_EQ(c->scheduling.tiers.size(), 1u);
  EXPECT_DOUBLE_EQ(c->scheduling.tiers[0].reserve_after_s, 3600);
  EXPECT_DOUBLE_EQ(c->scheduling.tiers[0].weight, 10);  // the default standard tier's
  auto absent = ParseConfig("gangTimeoutSeconds: 60\n");
  ASSERT_TRUE(absent.ok());
  EXPECT_EQ(absent->scheduling.tiers.size(), 4u);
  auto bad = ParseConfig("scheduling:\n  tiers: [{name: high, targetWaitSeconds: soon}]\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "scheduling.tiers[0].targetWaitSeconds: expected a number");
  EXPECT_FALSE(ParseConfig("scheduling: {preempt: always}\n").ok());
}

}  // namespace
}  // namespace phalanx::extender

namespace phalanx::extender {
namespace {

TEST(ObjectsTest, TrainingJobCarriesItsCostNoticeAndDeadline) {
  auto doc = json::Parse(R"({"apiVersion":"phalanx.io/v1alpha1","kind":"TrainingJob",
    "metadata":{"namespace":"ml","name":"llama","creationTimestamp":"2026-11-22T01:45:56Z",
                "annotations":{"phalanx.io/preempt-request":"{}"}},
    "spec":{"replicas":4,"runPolicy":{"activeDeadlineSeconds":7200}},
    "status":{"preemptionCost":{"gpuSecondsAtRisk":960,"noticeSecondsNeeded":45}}})");
  ASSERT_TRUE(doc.ok());
  auto tj = ParseTrainingJob(*doc);
  ASSERT_TRUE(tj.ok()) << tj.status();
  EXPECT_EQ(tj->Key(), "ml/llama");
  EXPECT_DOUBLE_EQ(tj->gpu_seconds_at_risk, 960);
  EXPECT_DOUBLE_EQ(tj->notice_seconds_needed, 45);
  EXPECT_DOUBLE_EQ(tj->active_deadline_seconds, 7200);
  EXPECT_EQ(tj->preempt_request, "{}");
  ASSERT_TRUE(tj->created.has_value());  // the job's submission: its gangs' place in the engine's order
  EXPECT_EQ(FormatRfc3339(*tj->created), "2026-11-22T01:45:56Z");
  auto bare = json::Parse(R"({"metadata":{"name":"x","creationTimestamp":"yesterday"},
    "spec":{"runPolicy":{"activeDeadlineSeconds":"soon"}}})");
  ASSERT_TRUE(bare.ok());
  auto none = ParseTrainingJob(*bare);
  ASSERT_TRUE(none.ok());
  EXPECT_DOUBLE_EQ(none->active_deadline_seconds, 0);  // not a number: no hint
  EXPECT_FALSE(none->created.has_value());              // not a time: first seen orders it
}

}  // namespace
}  // namespace phalanx::extender
