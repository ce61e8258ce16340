// Builders for extender tests: nodes, pods and a ready Extender over a FakeClock and a
// RecordingWriter. Node GPUs get per-node UUIDs ("<node>-gpu<i>") so device IDs are
// unique cluster-wide, as on real machines.
#pragma once

#include <initializer_list>
#include <string_view>

#include <future>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/topology/reference_machines.h"
#include "extender/extender.h"
#include "tests/fakes/clock/fake_clock.h"

namespace phalanx::extender::testing {

inline NodeInfo DgxNode(const std::string& name, const std::string& rack = "", const std::string& product = "H100") {
  NodeInfo n;
  n.name = NodeName(name);
  n.labels["kubernetes.io/hostname"] = name;
  if (!rack.empty()) n.labels["topology.kubernetes.io/rack"] = rack;
  if (!product.empty()) n.labels[std::string(kProductLabel)] = product;
  auto topo = topology::MakeDgxH100Node();
  for (size_t i = 0; i < topo.gpus.size(); ++i) topo.gpus[i].uuid = GpuUuid(name + "-gpu" + std::to_string(i));
  n.topology = std::move(topo);
  n.allocatable_gpus = 8;
  return n;
}

// The a100-mig reference machine with node-unique UUIDs: GPU 0 = 7 x 1g.10gb, GPU 1 =
// 3g.40gb + 2g.20gb + 2 x 1g.10gb, GPUs 2-7 whole; product "A100".
inline NodeInfo A100MigNode(const std::string& name) {
  NodeInfo n;
  n.name = NodeName(name);
  n.labels["kubernetes.io/hostname"] = name;
  n.labels[std::string(kProductLabel)] = "A100";
  auto topo = topology::MakeA100MigNode();
  for (size_t i = 0; i < topo.gpus.size(); ++i) {
    topo.gpus[i].uuid = GpuUuid(name + "-gpu" + std::to_string(i));
    for (size_t k = 0; k < topo.gpus[i].mig_devices.size(); ++k)
      topo.gpus[i].mig_devices[k].uuid = GpuUuid("MIG-" + name + "-" + std::to_string(i) + "-" + std::to_string(k));
  }
  n.topology = std::move(topo);
  n.allocatable_gpus = 6;
  return n;
}

inline NodeInfo PlainNode(const std::string& name, int gpus) {
  NodeInfo n;
  n.name = NodeName(name);
  n.allocatable_gpus = gpus;
  return n;
}

inline PodInfo GpuPod(const std::string& name, int gpus, int priority = 0, const std::string& node = "") {
  PodInfo p;
  p.uid = PodUid("uid-" + name);
  p.ns = "default";
  p.name = name;
  p.gpus = gpus;
  p.gpu_container = "main";
  p.priority = priority;
  p.node_name = node;
  p.phase = node.empty() ? PodPhase::kPending : PodPhase::kRunning;
  return p;
}

inline PodInfo GangPod(const std::string& gang, int index, int gpus, int min_members, int priority = 0) {
  PodInfo p = GpuPod(gang + "-" + std::to_string(index), gpus, priority);
  p.gang = gang;
  if (min_members > 0) p.min_members = min_members;
  p.gated = true;
  return p;
}

// The result's names are views into `names`: keep them alive while it is read.
inline FilterArgs Args(const PodInfo& pod, const std::vector<std::string>& names) {
  FilterArgs a;
  a.pod = pod;
  for (const auto& n : names) a.node_names.push_back(n);
  return a;
}
// A braced list of literals: views into the literals themselves, valid after the call (through
// the vector overload they pointed into a temporary vector, gone before the result was read).
inline FilterArgs Args(const PodInfo& pod, std::initializer_list<std::string_view> names) {
  FilterArgs a;
  a.pod = pod;
  a.node_names.assign(names.begin(), names.end());
  return a;
}

// Collects a bind's outcome (the callback may run later, on the write pool).
struct BindProbe {
  std::shared_ptr<std::promise<std::string>> promise = std::make_shared<std::promise<std::string>>();
  std::shared_future<std::string> result = promise->get_future().share();
  Extender::BindCallback Callback() {
    return [p = promise](std::string error) { p->set_value(std::move(error)); };
  }
  bool Done() const { return result.wait_for(std::chrono::seconds(0)) == std::future_status::ready; }
  std::string Wait() const {
    EXPECT_EQ(result.wait_for(std::chrono::seconds(20)), std::future_status::ready) << "bind never answered";
    return result.get();
  }
};

inline BindArgs BindOf(const PodInfo& pod, const std::string& node) {
  return BindArgs{pod.name, pod.ns, pod.uid.str(), node};
}

struct TestCluster {
  explicit TestCluster(ExtenderConfig config = DefaultConfig(), bool leader = true)
      : leadership(leader), ext(std::move(config), clock, writer, leadership) {}

  phalanx::testing::FakeClock clock;
  RecordingWriter writer;
  StaticLeadership leadership;
  Extender ext;
};

}  // namespace phalanx::extender::testing
