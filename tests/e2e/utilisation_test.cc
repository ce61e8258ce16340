// GPU utilisation end to end (issue 18), without the extender: the real device plugin on the fake
// NVML's utilisation curves (pcie-4gpu-utilisation: GPU 0 at 3 %, GPU 1 at 60 %) publishes the
// 5-minute mean and memory per device in phalanx.io/gpu-state, and attributes its /metrics series to
// the pod, container and TrainingJob label of a pod the kubelet driver admitted through it. (Idle
// detection with short windows is covered on the real binary by device_plugin_utilisation_test.)
#include <gtest/gtest.h>

#include "core/json/json.h"
#include "tests/e2e/drivers/pod_facts.h"
#include "tests/e2e/harness/cluster.h"
#include "tests/e2e/harness/poll.h"
#include "tests/e2e/scenario_objects.h"

namespace phalanx::e2e {
namespace {

using kube::Json;
using kube::resources::kNodes;
using kube::resources::kPods;

Json GetOrNull(kube::KubeClient& client, const kube::Resource& r, const std::string& ns, const std::string& name) {
  auto got = client.Get(r, ns, name);
  return got.ok() ? std::move(got).value() : Json();
}

TEST(E2eUtilisation, NodeStateCarriesUtilisationAndMetricsNameThePodAndItsJob) {
  auto started = Cluster::Start(
      {.nodes = {{"node-a", "pcie-4gpu-utilisation"}}, .start_operator = false, .start_extender = false});
  ASSERT_TRUE(started.ok()) << started.status();
  auto cluster = std::move(started).value();
  auto& client = cluster->client();
  const auto& gpus = cluster->gpu_uuids("node-a");
  ASSERT_EQ(gpus.size(), 4u);

  // The node summary, version 1 with the additive fields.
  json::Json state;
  ASSERT_TRUE(PollUntil([&] {
    auto s = json::Parse(Annotation(GetOrNull(client, kNodes, "", "node-a"), "phalanx.io/gpu-state"));
    if (!s.ok() || !(*s)["devices"][gpus[1]].contains("smUtil5m")) return false;
    state = *s;
    return true;
  })) << cluster->Diagnostics();
  EXPECT_EQ(state["version"], 1);
  EXPECT_EQ(state["devices"][gpus[0]]["smUtil5m"], 3.0);
  EXPECT_EQ(state["devices"][gpus[1]]["smUtil5m"], 60.0);
  EXPECT_EQ(state["devices"][gpus[1]]["memUsedMiB"], 30000);

  // A pod of TrainingJob "llm" holding all four GPUs, bound by hand and admitted by the kubelet driver.
  Json pod = GpuPod("llm-worker-0", 4, "phalanx-spot");
  pod["metadata"]["labels"]["phalanx.io/job-name"] = "llm";
  pod["metadata"]["labels"]["phalanx.io/gang"] = "llm-a0";
  ASSERT_TRUE(client.Create(kPods, "ml", pod).ok());
  ASSERT_TRUE(client.Bind("ml", "llm-worker-0", "node-a").ok());
  ASSERT_TRUE(PollUntil([&] { return Phase(GetOrNull(client, kPods, "ml", "llm-worker-0")) == "Running"; }))
      << cluster->Diagnostics();
  auto series = [&](const std::string& gpu) {
    return "phalanx_gpu_sm_utilisation{node=\"node-a\",gpu=\"" + gpu +
           "\",pod=\"llm-worker-0\",namespace=\"ml\",container=\"main\",job=\"llm\",gang=\"llm-a0\",tier=\"phalanx-spot\"}";
  };
  ASSERT_TRUE(PollUntil([&] { return cluster->Metric("node-a", series(gpus[1])).has_value(); }))
      << cluster->Metrics("node-a");
  EXPECT_EQ(cluster->Metric("node-a", series(gpus[1])), 60.0);
  EXPECT_EQ(cluster->Metric("node-a", series(gpus[0])), 3.0);

  // The pod leaves: its series go, the devices are measured with empty pod labels again.
  ASSERT_TRUE(client.Delete(kPods, "ml", "llm-worker-0").ok());
  ASSERT_TRUE(PollUntil([&] {
    const std::string m = cluster->Metrics("node-a");
    return m.find("pod=\"llm-worker-0\"") == std::string::npos &&
           m.find("phalanx_gpu_sm_utilisation{node=\"node-a\",gpu=\"" + gpus[1] + "\",pod=\"\"") != std::string::npos;
  })) << cluster->Metrics("node-a");
}

}  // namespace
}  // namespace phalanx::e2e
