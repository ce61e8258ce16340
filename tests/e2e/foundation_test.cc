// The foundation of the end-to-end suite, without the extender: the real device plugins on the
// fake NVML register with their node's fake kubelet and publish labels, topology and state on the
// Node objects; the kubelet driver allocates through them; the real operator turns a TrainingJob
// into a gated gang.
#include <gtest/gtest.h>

#include <set>

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
using kube::resources::kTrainingJobs;

std::unique_ptr<Cluster> StartCluster(ClusterOptions options) {
  auto started = Cluster::Start(std::move(options));
  EXPECT_TRUE(started.ok()) << started.status();
  return started.ok() ? std::move(started).value() : nullptr;
}

Json GetOrNull(kube::KubeClient& client, const kube::Resource& r, const std::string& ns, const std::string& name) {
  auto got = client.Get(r, ns, name);
  return got.ok() ? std::move(got).value() : Json();
}

TEST(E2eFoundation, DevicePluginsRegisterAndPublishNodeState) {
  auto cluster = StartCluster({.nodes = {{"node-a"}, {"node-b"}}, .start_operator = false, .start_extender = false});
  ASSERT_TRUE(cluster);
  for (const std::string node : {"node-a", "node-b"}) {
    auto* plugin = cluster->kubelet(node).Plugin("nvidia.com/gpu");
    ASSERT_NE(plugin, nullptr) << cluster->Diagnostics();
    ASSERT_TRUE(plugin->WaitForDevices([](const auto& d) { return d.size() == 8; }, kHangDeadline));
    std::set<std::string> advertised;
    for (const auto& d : plugin->devices()) {
      EXPECT_EQ(d.health(), "Healthy");
      advertised.insert(d.id());
    }
    const auto& uuids = cluster->gpu_uuids(node);
    EXPECT_EQ(advertised, std::set<std::string>(uuids.begin(), uuids.end()));

    // Labels and both annotations on the Node.
    Json n;
    ASSERT_TRUE(PollUntil([&] {
      n = GetOrNull(cluster->client(), kNodes, "", node);
      return !Annotation(n, "phalanx.io/gpu-topology").empty() && !Annotation(n, "phalanx.io/gpu-state").empty() &&
             !Label(n, "phalanx.io/gpu.product").empty();
    })) << n.dump() << cluster->Diagnostics();
    EXPECT_EQ(Label(n, "phalanx.io/gpu.count"), "8");
    auto state = json::Parse(Annotation(n, "phalanx.io/gpu-state"));
    ASSERT_TRUE(state.ok()) << Annotation(n, "phalanx.io/gpu-state");
    ASSERT_EQ((*state)["devices"].size(), 8u) << state->dump();
    for (const auto& uuid : uuids) {
      ASSERT_TRUE((*state)["devices"].contains(uuid)) << uuid << " " << state->dump();
      EXPECT_EQ((*state)["devices"][uuid]["health"], "Healthy");
    }
    auto topology = json::Parse(Annotation(n, "phalanx.io/gpu-topology"));
    ASSERT_TRUE(topology.ok());
    EXPECT_NE(topology->dump().find(uuids[0]), std::string::npos);
  }
  // The kubelet driver keeps the Node's allocatable equal to the healthy devices.
  EXPECT_EQ(NodeAllocatableGpus(GetOrNull(cluster->client(), kNodes, "", "node-a")), 8);
}

TEST(E2eFoundation, KubeletDriverAllocatesThroughTheDevicePlugin) {
  auto cluster = StartCluster({.nodes = {{"node-a"}}, .start_operator = false, .start_extender = false});
  ASSERT_TRUE(cluster);
  auto& client = cluster->client();
  // A pod bound by hand (no scheduler here), 4 GPUs.
  ASSERT_TRUE(client.Create(kPods, "ml", GpuPod("infer", 4, "")).ok());
  ASSERT_TRUE(client.Bind("ml", "infer", "node-a").ok());
  Json pod;
  ASSERT_TRUE(PollUntil([&] {
    pod = GetOrNull(client, kPods, "ml", "infer");
    return Phase(pod) == "Running";
  })) << pod.dump() << cluster->Diagnostics();
  auto allocation = cluster->kubelet_driver("node-a").AllocationOf("ml/infer");
  ASSERT_TRUE(allocation);
  EXPECT_TRUE(allocation->preferred_allocation_used);
  ASSERT_EQ(allocation->devices["main"].size(), 4u);
  // Allocate's answer names the same devices the container gets.
  std::string joined;
  for (const auto& id : allocation->devices["main"]) joined += (joined.empty() ? "" : ",") + id;
  EXPECT_EQ(allocation->visible_devices["main"], joined);

  // The plugin publishes the allocation (from pod-resources) in gpu-state.
  const std::string uid = Uid(pod);
  ASSERT_TRUE(PollUntil([&] {
    auto state = json::Parse(Annotation(GetOrNull(client, kNodes, "", "node-a"), "phalanx.io/gpu-state"));
    if (!state.ok()) return false;
    int held = 0;
    for (const auto& [id, d] : (*state)["devices"].items()) held += d.contains("podUID") && d["podUID"] == uid;
    return held == 4;
  })) << Annotation(GetOrNull(client, kNodes, "", "node-a"), "phalanx.io/gpu-state");

  // Deletion: the container exits with its termination message, the pod goes, devices free up.
  ASSERT_TRUE(client.Delete(kPods, "ml", "infer").ok());
  ASSERT_TRUE(PollUntil([&] { return IsNotFound(client.Get(kPods, "ml", "infer").status()); }))
      << cluster->Diagnostics();
  ASSERT_TRUE(PollUntil([&] {
    auto state = json::Parse(Annotation(GetOrNull(client, kNodes, "", "node-a"), "phalanx.io/gpu-state"));
    if (!state.ok()) return false;
    for (const auto& [id, d] : (*state)["devices"].items()) {
      if (d.contains("podUID") && d["podUID"].is_string()) return false;
    }
    return true;
  }));
}

TEST(E2eFoundation, KubeletRestartAndXidMakeTheGpuUnhealthyEverywhere) {
  auto cluster = StartCluster({.nodes = {{"node-a"}}, .start_operator = false, .start_extender = false});
  ASSERT_TRUE(cluster);
  auto& kubelet = cluster->kubelet("node-a");
  ASSERT_EQ(kubelet.generation(), 0);
  // kubelet restarts: the device-plugins directory is wiped; the plugin must register again.
  ASSERT_TRUE(cluster->RestartKubelet("node-a").ok());
  ASSERT_TRUE(PollUntil([&] { return kubelet.Plugin("nvidia.com/gpu") != nullptr; }))
      << cluster->Diagnostics();
  auto* plugin = kubelet.Plugin("nvidia.com/gpu");
  ASSERT_TRUE(plugin->WaitForDevices([](const auto& d) { return d.size() == 8; }, kHangDeadline));

  // XID 79 (GPU fell off the bus) on GPU 3.
  const std::string bad = cluster->gpu_uuids("node-a")[3];
  ASSERT_TRUE(cluster->InjectNvmlEvent("node-a", R"({"gpu": ")" + bad + R"(", "type": "xid", "xid": 79})").ok());
  ASSERT_TRUE(plugin->WaitForDevices(
      [&](const auto& devices) {
        for (const auto& d : devices) {
          if (d.id() == bad) return d.health() == "Unhealthy";
        }
        return false;
      },
      kHangDeadline))
      << cluster->Diagnostics();
  // Published on the Node, and kubelet's allocatable drops to the healthy count.
  Json state;
  ASSERT_TRUE(PollUntil([&] {
    auto parsed = json::Parse(Annotation(GetOrNull(cluster->client(), kNodes, "", "node-a"), "phalanx.io/gpu-state"));
    if (!parsed.ok()) return false;
    state = *parsed;
    return state["devices"].contains(bad) && state["devices"][bad]["health"] == "Unhealthy";
  })) << state.dump();
  EXPECT_EQ(state["devices"][bad].value("xid", 0), 79) << state.dump();
  ASSERT_TRUE(PollUntil([&] { return NodeAllocatableGpus(GetOrNull(cluster->client(), kNodes, "", "node-a")) == 7; }));
  // A new 8-GPU pod cannot be admitted on 7 healthy GPUs; kubelet fails it.
  ASSERT_TRUE(cluster->client().Create(kPods, "ml", GpuPod("big", 8, "")).ok());
  ASSERT_TRUE(cluster->client().Bind("ml", "big", "node-a").ok());
  Json big;
  ASSERT_TRUE(PollUntil([&] {
    big = GetOrNull(cluster->client(), kPods, "ml", "big");
    return Phase(big) == "Failed";
  })) << big.dump();
  EXPECT_EQ(big["status"].value("reason", ""), "UnexpectedAdmissionError");
}

TEST(E2eFoundation, OperatorCreatesAGatedGang) {
  auto cluster = StartCluster({.nodes = {{"node-a"}}, .start_operator = true, .start_extender = false});
  ASSERT_TRUE(cluster);
  auto& client = cluster->client();
  ASSERT_TRUE(client.Create(kTrainingJobs, "ml", TrainingJob({.name = "llm", .checkpoint_dir = "/ckpt/llm"})).ok());
  Json pods;
  ASSERT_TRUE(PollUntil([&] {
    kube::ListOptions lo;
    lo.label_selector = "phalanx.io/job-name=llm";
    auto listed = client.List(kPods, "ml", lo);
    if (!listed.ok()) return false;
    pods = *listed;
    return pods["items"].size() == 2;
  })) << pods.dump() << cluster->Diagnostics();
  for (const auto& p : pods["items"]) {
    EXPECT_TRUE(Gated(p)) << p.dump();
    EXPECT_EQ(p["spec"]["schedulingGates"][0]["name"], "phalanx.io/gang");
    EXPECT_EQ(p["spec"]["schedulerName"], "phalanx-scheduler");
    EXPECT_EQ(Label(p, "phalanx.io/gang"), "llm-a1");
    EXPECT_EQ(Label(p, "phalanx.io/attempt"), "1");
    EXPECT_EQ(Annotation(p, "phalanx.io/gang-min-members"), "2");
    EXPECT_EQ(PodGpus(p), 8);
    EXPECT_EQ(Priority(p), 1000);  // phalanx-standard, resolved by the API server's admission
    EXPECT_NE(p["metadata"]["finalizers"].dump().find("phalanx.io/checkpoint"), std::string::npos);
  }
  Json job;
  ASSERT_TRUE(PollUntil([&] {
    job = GetOrNull(client, kTrainingJobs, "ml", "llm");
    return job.contains("status") && job["status"].value("attempt", 0) == 1 &&
           !job["status"].value("phase", std::string()).empty();
  })) << job.dump();
  EXPECT_TRUE(job["status"]["phase"] == "Pending" || job["status"]["phase"] == "Queued") << job.dump();
  EXPECT_TRUE(cluster->client().Get(kube::resources::kServices, "ml", "llm").ok());
}

}  // namespace
}  // namespace phalanx::e2e
