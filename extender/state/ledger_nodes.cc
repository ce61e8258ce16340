// Ledger (ledger.h): node intake. A node's topology becomes a placement::NodeSpec (one shared
// bandwidth matrix per machine shape); pods waiting for the node are charged when it arrives.
#include "extender/state/ledger.h"

#include <algorithm>

#include "core/placement/topology_bandwidth.h"
#include "extender/mig/mig_devices.h"

namespace phalanx::extender {

using placement::GpuMask;

std::shared_ptr<const placement::BandwidthMatrix> Ledger::SharedMatrix(placement::BandwidthMatrix m) {
  // Thousands of nodes share a handful of shapes; keep one matrix per shape.
  for (const auto& existing : matrices_) {
    if (existing->size() != m.size()) continue;
    bool same = true;
    for (int i = 0; i < m.size() && same; ++i) {
      for (int j = 0; j < m.size() && same; ++j) same = existing->at(i, j) == m.at(i, j);
    }
    if (same) return existing;
  }
  auto shared = std::make_shared<const placement::BandwidthMatrix>(std::move(m));
  matrices_.push_back(shared);
  return shared;
}

placement::NodeSpec Ledger::SpecFor(const NodeRecord& rec) const {
  const NodeInfo& n = rec.info;
  placement::NodeSpec spec;
  spec.name = n.name;
  spec.pool = std::string(n.Label(kProductLabel));
  spec.schedulable = !n.unschedulable && n.ready;
  for (const std::string& level : state_.levels()) {
    std::string value(n.Label(level));
    if (value.empty() && level == kHostnameLabel) value = n.name.str();
    spec.domains.push_back(std::move(value));
  }
  if (rec.topology_known) {
    const auto& topo = *n.topology;
    spec.gpu_count = std::min(topo.gpu_count(), placement::kMaxGpusPerNode);
    spec.healthy = placement::WholeGpuMask(topo) & placement::AllGpus(spec.gpu_count);
    spec.mig = placement::MigGpuMask(topo) & placement::AllGpus(spec.gpu_count);
  } else {
    spec.gpu_count = std::min(n.allocatable_gpus, placement::kMaxGpusPerNode);
    spec.healthy = placement::AllGpus(spec.gpu_count);
  }
  // The device plugin's health report: device ID = GPU UUID (or "<uuid>::<n>" replicas).
  for (const auto& [id, dev] : n.devices) {
    if (dev.healthy) continue;
    auto it = rec.index_of_uuid.find(id.substr(0, id.find("::")));
    if (it != rec.index_of_uuid.end() && it->second < spec.gpu_count) spec.healthy &= ~(GpuMask{1} << it->second);
  }
  return spec;
}

Status Ledger::UpsertNode(const NodeInfo& info) {
  ++release_epoch_;  // capacity or health may have grown
  NodeRecord rec;
  rec.info = info;
  rec.topology_known = info.topology.has_value() && info.topology->gpu_count() <= placement::kMaxGpusPerNode;
  if (rec.topology_known) {
    for (const auto& gpu : info.topology->gpus) {
      rec.index_of_uuid.emplace(gpu.uuid.str(), static_cast<int>(rec.uuids.size()));
      rec.uuids.push_back(gpu.uuid.str());
    }
  }
  placement::NodeSpec spec = SpecFor(rec);
  if (rec.topology_known) spec.bandwidth = SharedMatrix(placement::BandwidthFromTopology(*info.topology));

  // Pods charged on the node are re-charged: devices, health or size may have changed.
  std::vector<PodUid> on_node;
  if (auto idx = state_.FindNode(info.name)) {
    for (const auto* alloc : state_.node(*idx).pods) on_node.push_back(alloc->pod);
  }
  if (auto wit = waiting_.find(info.name); wit != waiting_.end()) {
    on_node.insert(on_node.end(), wit->second.begin(), wit->second.end());
    waiting_.erase(wit);
  }
  for (const PodUid& uid : on_node) Uncharge(pods_.at(uid));

  nodes_[info.name] = std::move(rec);
  Status st = state_.FindNode(info.name) ? state_.UpdateNode(spec) : state_.AddNode(spec).status();
  if (st.code() == StatusCode::kFailedPrecondition) {  // shrank below a holding: rebuild the node
    auto removed = state_.RemoveNode(info.name);
    if (removed.ok()) {
      for (const GangKey& g : removed->plans) DropPlan(g);
    }
    st = state_.AddNode(spec).status();
  }
  NoteMigNode(info.name);  // its holdings may go with its devices, its pool may change
  if (!st.ok()) {
    nodes_.erase(info.name);
    mig_.RemoveNode(info.name);
    return st;
  }
  // MIG holdings follow their device IDs; bound MIG pods still waiting are in on_node.
  mig_.SetNode(info.name, MigSlicesOf(info));
  for (const PodUid& uid : on_node) Charge(pods_.at(uid));
  return OkStatus();
}

void Ledger::RemoveNode(const NodeName& name) {
  if (!nodes_.contains(name)) return;
  std::vector<PodUid> on_node;
  if (auto idx = state_.FindNode(name)) {
    for (const auto* alloc : state_.node(*idx).pods) on_node.push_back(alloc->pod);
  }
  for (const PodUid& uid : on_node) Uncharge(pods_.at(uid));
  auto removed = state_.RemoveNode(name);
  if (removed.ok()) {
    for (const GangKey& g : removed->plans) DropPlan(g);
  }
  NoteMigNode(name);
  mig_.RemoveNode(name);
  nodes_.erase(name);
}

}  // namespace phalanx::extender
