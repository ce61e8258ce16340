// `--cluster` given a `kubectl get nodes,pods -A -o json` snapshot: detected by content,
// read with the extender's reader into the extender's ledger; bound pods hold their GPUs
// (and MIG devices) for the whole replay.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/topology/reference_machines.h"
#include "core/topology/topology_codec.h"
#include "sim/cluster/snapshot_cluster.h"
#include "sim/engine/simulator.h"
#include "sim/policy/policies.h"
#include "tests/unit/sim/test_util.h"

namespace phalanx::sim {
namespace {

using nlohmann::json;
using testing::MakeJob;
using testing::MakeWorkload;

json Node(const std::string& name, const std::string& product, const topology::NodeTopology* topo, int allocatable) {
  json n = {{"kind", "Node"},
            {"apiVersion", "v1"},
            {"metadata", {{"name", name}, {"labels", {{"phalanx.io/gpu.product", product}, {"topology.kubernetes.io/rack", "r1"}}}}},
            {"status", {{"allocatable", {{"nvidia.com/gpu", std::to_string(allocatable)}}}}}};
  if (topo) n["metadata"]["annotations"]["phalanx.io/gpu-topology"] = *topology::EncodeTopology(*topo);
  return n;
}

json Pod(const std::string& name, const std::string& node, const std::string& resource, int count) {
  json p = {{"kind", "Pod"},
            {"apiVersion", "v1"},
            {"metadata", {{"name", name}, {"namespace", "team"}, {"uid", "uid-" + name}}},
            {"spec", {{"containers", json::array({{{"name", "main"}, {"resources", {{"limits", {{resource, std::to_string(count)}}}}}}})}}},
            {"status", {{"phase", node.empty() ? "Pending" : "Running"}}}};
  if (!node.empty()) p["spec"]["nodeName"] = node;
  return p;
}

// dgx (8 x H100, 4 held by a bound pod), a100 (MIG node: its 3g.40gb held), plain (4 GPUs,
// no topology annotation: usable by count), a pending pod (ignored).
std::string SnapshotText() {
  const topology::NodeTopology dgx = topology::MakeDgxH100Node();
  const topology::NodeTopology a100 = topology::MakeA100MigNode();
  json items = json::array({Node("dgx", "H100", &dgx, 8), Node("a100", "A100", &a100, 6), Node("plain", "L4", nullptr, 4),
                            Pod("train", "dgx", "nvidia.com/gpu", 4), Pod("infer", "a100", "nvidia.com/mig-3g.40gb", 1),
                            Pod("waiting", "", "nvidia.com/gpu", 8)});
  return json{{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}}.dump(2);
}

std::string WriteTemp(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / name;
  std::ofstream(path) << text;
  return path.string();
}

TEST(SnapshotClusterTest, DetectedByContent) {
  EXPECT_TRUE(LooksLikeSnapshot(SnapshotText()));
  EXPECT_TRUE(LooksLikeSnapshot(R"({"nodes": [], "pods": []})"));
  EXPECT_FALSE(LooksLikeSnapshot("nodeGroups:\n  - {name: a, count: 1, gpuModel: H100}\n"));
  EXPECT_FALSE(LooksLikeSnapshot("{name: a, nodeGroups: [{name: a, count: 1, gpuModel: H100}]}"));
  EXPECT_FALSE(LooksLikeSnapshot(R"({"nodeGroups": [{"name": "a", "count": 1, "gpuModel": "H100"}]})"));
}

TEST(SnapshotClusterTest, BoundPodsHoldTheirGpusAndMigDevices) {
  const std::string path = WriteTemp("phalanx-sim-snapshot.json", SnapshotText());
  auto spec = LoadClusterSpec(path);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  ASSERT_NE(spec->snapshot, nullptr);
  EXPECT_EQ(spec->TotalNodes(), 3);
  EXPECT_EQ(spec->TotalGpus(), 8 + 8 + 4);
  EXPECT_EQ(spec->MigGpus(), 2);
  auto built = BuildSimCluster(*spec);
  ASSERT_TRUE(built.ok());
  EXPECT_EQ(built->state.TotalGpus(), 8 + 6 + 4);
  EXPECT_EQ(built->state.FreeGpus(), 4 + 6 + 4);
  EXPECT_EQ(built->preexisting_pods, 2);
  EXPECT_EQ(built->mig.UsedCompute(), 3);
  EXPECT_EQ(built->state.node(*built->state.FindNode(NodeName("dgx"))).spec.domains[kLevelRack], "r1");
  std::filesystem::remove(path);
}

TEST(SnapshotClusterTest, ReplayStartsFromTheSnapshot) {
  const std::string path = WriteTemp("phalanx-sim-snapshot-replay.json", SnapshotText());
  auto spec = LoadClusterSpec(path);
  ASSERT_TRUE(spec.ok());
  // Two 4-GPU H100 jobs: only 4 H100 GPUs are free, so the second waits for the first.
  Job a = MakeJob(0, 100, 1, 4), b = MakeJob(0, 100, 1, 4);
  a.pool = b.pool = "H100";
  // The a100's only 3g.40gb is held by the snapshot's pod for good; a 2g.20gb job runs.
  Job mig = MakeJob(0, 50, 1, 1);
  mig.mig_profile = "2g.20gb";
  Workload w = MakeWorkload({a, b, mig});
  for (const std::string& name : PolicyNames()) {
    auto policy = MakePolicy(name);
    auto built = BuildSimCluster(*spec);
    ASSERT_TRUE(built.ok() && policy.ok());
    Simulator sim(w, std::move(built->state), std::move(built->mig), **policy);
    PolicyReport rep = sim.Run();
    EXPECT_EQ(rep.completed, 3) << name;
    EXPECT_DOUBLE_EQ(sim.run(1).first_start, 100) << name;
    EXPECT_EQ(rep.mig_completed, 1) << name;
    EXPECT_EQ(sim.state().FreeGpus(), 4 + 6 + 4) << name;  // the snapshot's pods still hold theirs
  }
  std::filesystem::remove(path);
}

TEST(SnapshotClusterTest, BadItemsAreNamed) {
  const std::string path = WriteTemp("phalanx-sim-snapshot-bad.json",
                                     R"({"kind":"List","items":[{"kind":"Pod","metadata":{"name":"x","namespace":"n","uid":"u"},
                                        "spec":{"containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpu":"lots"}}}]}}]})");
  auto spec = LoadClusterSpec(path);
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find("items[0]"), std::string::npos) << spec.status().message();
  EXPECT_EQ(spec.status().message().rfind(path, 0), 0u) << spec.status().message();
  const std::string empty = WriteTemp("phalanx-sim-snapshot-empty.json", R"({"kind":"List","items":[]})");
  EXPECT_EQ(LoadClusterSpec(empty).status().message(), empty + ": the snapshot has no node with GPUs (0 nodes)");
  std::filesystem::remove(path);
  std::filesystem::remove(empty);
}

}  // namespace
}  // namespace phalanx::sim
