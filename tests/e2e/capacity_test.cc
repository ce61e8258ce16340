// Issue 9 §2, scenario 3: a gang larger than the free capacity waits without holding any GPU, and
// pods scheduled meanwhile are never given GPUs reserved for an admitted gang.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "core/json/json.h"
#include "tests/e2e/scenario_helpers.h"
#include "tests/e2e/scenario_objects.h"

namespace phalanx::e2e {
namespace {

using kube::Json;
using kube::resources::kPods;
using kube::resources::kTrainingJobs;

Json WaitRunning(Cluster& cluster, const std::string& name) {
  Json pod;
  EXPECT_TRUE(PollUntil([&] {
    pod = GetOrNull(cluster.client(), kPods, cluster.ns(), name);
    return Phase(pod) == "Running";
  })) << pod.dump() << cluster.Diagnostics();
  return pod;
}

std::set<std::string> AllocatedDevices(Cluster& cluster, const Json& pod) {
  std::set<std::string> out;
  auto allocation = cluster.kubelet_driver(NodeName(pod)).AllocationOf(Key(pod));
  if (!allocation) return out;
  for (const auto& [container, ids] : allocation->devices) out.insert(ids.begin(), ids.end());
  return out;
}

TEST(E2eCapacity, GangLargerThanFreeCapacityWaitsWithoutHoldingGpus) {
  auto cluster = StartCluster({.nodes = {{"node-a"}, {"node-b"}}});
  ASSERT_TRUE(cluster);
  auto& client = cluster->client();
  ASSERT_TRUE(client.Create(kPods, "ml", GpuPod("occupant", 4, "phalanx-standard")).ok());
  WaitRunning(*cluster, "occupant");
  if (HasFailure()) return;

  // 12 GPUs free, the gang needs 16: it waits, gated, reserving nothing.
  ASSERT_TRUE(client.Create(kTrainingJobs, "ml", TrainingJob({.name = "big"})).ok());
  std::vector<Json> big;
  ASSERT_TRUE(PollUntil([&] {
    big = ListPods(client, "ml", "phalanx.io/job-name=big");
    return big.size() == 2;
  })) << cluster->Diagnostics();
  // A pod arriving meanwhile gets free GPUs: the waiting gang holds none.
  ASSERT_TRUE(client.Create(kPods, "ml", GpuPod("small", 2, "phalanx-standard")).ok());
  const Json small = WaitRunning(*cluster, "small");
  if (HasFailure()) return;
  for (const auto& p : ListPods(client, "ml", "phalanx.io/job-name=big")) {
    EXPECT_TRUE(NodeName(p).empty()) << p.dump();
    EXPECT_TRUE(Annotation(p, "phalanx.io/devices").empty()) << p.dump();
  }
  EXPECT_EQ(cluster->Metric("extender", "phalanx_extender_gangs_admitted").value_or(-1), 0);

  // Capacity returns: the gang runs.
  ASSERT_TRUE(cluster->kubelet_driver(NodeName(WaitRunning(*cluster, "occupant"))).Finish("ml", "occupant", 0, "").ok());
  ASSERT_TRUE(cluster->kubelet_driver(NodeName(small)).Finish("ml", "small", 0, "").ok());
  ASSERT_TRUE(PollUntil([&] {
    big = ListPods(client, "ml", "phalanx.io/job-name=big");
    return big.size() == 2 && std::all_of(big.begin(), big.end(), [](const Json& p) { return Phase(p) == "Running"; });
  })) << Json(big).dump() << cluster->Diagnostics();
}

TEST(E2eCapacity, PodsScheduledMeanwhileNeverGetGpusReservedForAnAdmittedGang) {
  auto cluster = StartCluster({.nodes = {{"node-a"}, {"node-b"}}});
  ASSERT_TRUE(cluster);
  auto& client = cluster->client();
  // A slow scheduler for the gang's members: the gang is admitted (gates lifted, GPUs reserved)
  // but not yet bound while other pods arrive.
  cluster->scheduler()->Hold("phalanx.io/job-name", "mid");
  ASSERT_TRUE(client.Create(kTrainingJobs, "ml", TrainingJob({.name = "mid", .gpus_per_replica = 6})).ok());
  std::vector<Json> mid;
  ASSERT_TRUE(PollUntil([&] {
    mid = ListPods(client, "ml", "phalanx.io/job-name=mid");
    return mid.size() == 2 && std::none_of(mid.begin(), mid.end(), [](const Json& p) { return Gated(p); });
  })) << Json(mid).dump() << cluster->Diagnostics();

  // 4 GPUs are not reserved (2 per node): a 2-GPU pod fits there...
  ASSERT_TRUE(client.Create(kPods, "ml", GpuPod("small-2", 2, "phalanx-standard")).ok());
  const Json small = WaitRunning(*cluster, "small-2");
  if (HasFailure()) return;
  // ...but a 4-GPU pod does not, although 6 and 8 GPUs are physically free on the nodes.
  ASSERT_TRUE(client.Create(kPods, "ml", GpuPod("small-4", 4, "phalanx-standard")).ok());
  ASSERT_TRUE(PollUntil([&] {
    for (const auto& call : cluster->scheduler()->calls()) {
      if (call.verb != "filter" || call.pod != "ml/small-4" || call.status != 200) continue;
      auto answer = json::Parse(call.response);
      if (answer.ok() && (*answer)["NodeNames"].empty() &&
          call.response.find("reserved by gang plans") != std::string::npos) {
        return true;
      }
    }
    return false;
  })) << cluster->Diagnostics();
  EXPECT_TRUE(NodeName(GetOrNull(client, kPods, "ml", "small-4")).empty());

  // The gang binds on exactly the GPUs it reserved: none of them went to the small pod.
  cluster->scheduler()->Release();
  ASSERT_TRUE(PollUntil([&] {
    mid = ListPods(client, "ml", "phalanx.io/job-name=mid");
    return mid.size() == 2 && std::all_of(mid.begin(), mid.end(), [](const Json& p) { return Phase(p) == "Running"; });
  })) << Json(mid).dump() << cluster->Diagnostics();
  const auto small_devices = AllocatedDevices(*cluster, small);
  ASSERT_EQ(small_devices.size(), 2u);
  for (const auto& p : mid) {
    const auto devices = AllocatedDevices(*cluster, p);
    EXPECT_EQ(devices.size(), 6u) << Key(p);
    for (const auto& d : devices) EXPECT_EQ(small_devices.count(d), 0u) << d << " given to both";
  }
  EXPECT_TRUE(NodeName(GetOrNull(client, kPods, "ml", "small-4")).empty());
}

}  // namespace
}  // namespace phalanx::e2e
