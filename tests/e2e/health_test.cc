// Issue 9 §2, scenario 4: a kubelet restart (socket directory wiped) and an XID on one GPU: the
// device plugin registers again, the GPU turns unhealthy, and the extender stops offering it.
#include <gtest/gtest.h>

#include "core/json/json.h"
#include "tests/e2e/scenario_helpers.h"
#include "tests/e2e/scenario_objects.h"
#include "tests/fakes/apiserver/raw_client.h"

namespace phalanx::e2e {
namespace {

using kube::Json;
using kube::resources::kNodes;
using kube::resources::kPods;

TEST(E2eHealth, KubeletRestartAndXidTakeTheGpuOutOfTheExtendersOffers) {
  auto cluster = StartCluster({.nodes = {{"node-a"}}});
  ASSERT_TRUE(cluster);
  auto& client = cluster->client();
  ASSERT_TRUE(cluster->RestartKubelet("node-a").ok());
  ASSERT_TRUE(PollUntil([&] { return cluster->kubelet("node-a").Plugin("nvidia.com/gpu") != nullptr; }))
      << cluster->Diagnostics();

  const std::string bad = cluster->gpu_uuids("node-a")[3];
  ASSERT_TRUE(cluster->InjectNvmlEvent("node-a", R"({"gpu": ")" + bad + R"(", "type": "xid", "xid": 79})").ok());
  ASSERT_TRUE(PollUntil([&] {
    auto state = json::Parse(Annotation(GetOrNull(client, kNodes, "", "node-a"), "phalanx.io/gpu-state"));
    return state.ok() && (*state)["devices"].contains(bad) && (*state)["devices"][bad]["health"] == "Unhealthy";
  })) << cluster->Diagnostics();

  // The extender no longer offers 8 GPUs on node-a: a filter for an 8-GPU pod fails there (asked
  // directly, as kube-scheduler would if its own fit let the pod through).
  Json probe = GpuPod("probe", 8, "phalanx-standard");
  probe["metadata"]["namespace"] = "ml";
  probe["metadata"]["uid"] = "00000000-0000-0000-0000-00000000e2e4";
  fakes::apiserver::testing::RawClient extender(cluster->extender_url().substr(0, cluster->extender_url().size() - 3));
  Json answer;
  ASSERT_TRUE(PollUntil([&] {
    auto r = extender.Post("/v1/filter", Json{{"Pod", probe}, {"Nodes", nullptr}, {"NodeNames", {"node-a"}}});
    answer = r.Json();
    return r.status == 200 && answer["NodeNames"].is_array() && answer["NodeNames"].empty();
  })) << answer.dump();

  // A 7-GPU pod runs on the 7 healthy GPUs; the extender committed none of them to the bad one.
  ASSERT_TRUE(client.Create(kPods, "ml", GpuPod("seven", 7, "phalanx-standard")).ok());
  Json pod;
  ASSERT_TRUE(PollUntil([&] {
    pod = GetOrNull(client, kPods, "ml", "seven");
    return Phase(pod) == "Running";
  })) << pod.dump() << cluster->Diagnostics();
  auto committed = json::Parse(Annotation(pod, "phalanx.io/devices"));
  ASSERT_TRUE(committed.ok()) << pod.dump();
  EXPECT_EQ(committed->dump().find(bad), std::string::npos) << committed->dump();
  auto allocation = cluster->kubelet_driver("node-a").AllocationOf("ml/seven");
  ASSERT_TRUE(allocation);
  ASSERT_EQ(allocation->devices["main"].size(), 7u);
  for (const auto& id : allocation->devices["main"]) EXPECT_NE(id, bad);
}

}  // namespace
}  // namespace phalanx::e2e
