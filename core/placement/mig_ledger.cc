#include "core/placement/mig_ledger.h"

#include <fmt/format.h>

namespace phalanx::placement {

MigLedger::MigLedger(const MigLedger& other) : nodes_(other.nodes_), pods_(other.pods_) { Reindex(); }

MigLedger& MigLedger::operator=(const MigLedger& other) {
  if (this != &other) {
    nodes_ = other.nodes_;
    pods_ = other.pods_;
    Reindex();
  }
  return *this;
}

void MigLedger::Index(Entry& entry) {
  int32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
    slots_[static_cast<size_t>(slot)] = &entry;
  } else {
    slot = static_cast<int32_t>(slots_.size());
    slots_.push_back(&entry);
  }
  index_.Insert(entry.first.str(), slot);
}

void MigLedger::Unindex(const NodeName& node) {
  auto name_of = [this](int32_t i) { return std::string_view(slots_[static_cast<size_t>(i)]->first.str()); };
  const std::optional<int32_t> slot = index_.FindWith(node.str(), name_of);
  if (!slot) return;
  index_.Erase(node.str(), name_of);
  slots_[static_cast<size_t>(*slot)] = nullptr;
  free_slots_.push_back(*slot);
}

void MigLedger::Reindex() {
  index_ = NodeNameIndex();
  slots_.clear();
  free_slots_.clear();
  for (Entry& e : nodes_) Index(e);
}

void MigLedger::SetNode(const NodeName& node, std::vector<MigSlice> slices) {
  if (slices.empty()) {
    RemoveNode(node);
    return;
  }
  MigNode fresh(std::move(slices));
  auto old = nodes_.find(node);
  if (old != nodes_.end()) {
    // Carry holdings over by device ID; pods whose devices all vanished lose their holding.
    std::unordered_map<PodUid, std::vector<int>> moved;
    for (size_t i = 0; i < old->second.slices().size(); ++i) {
      const PodUid& holder = old->second.holder(i);
      if (holder.empty()) continue;
      for (size_t j = 0; j < fresh.slices().size(); ++j) {
        if (fresh.slices()[j].device_id == old->second.slices()[i].device_id) {
          moved[holder].push_back(static_cast<int>(j));
          break;
        }
      }
    }
    for (auto it = pods_.begin(); it != pods_.end();) {
      if (it->second.node != node) {
        ++it;
        continue;
      }
      auto m = moved.find(it->first);
      if (m == moved.end()) {
        it = pods_.erase(it);
        continue;
      }
      (void)fresh.Take(m->second, it->first);
      it->second.devices = m->second;
      ++it;
    }
    old->second = std::move(fresh);
    return;
  }
  Index(*nodes_.emplace(node, std::move(fresh)).first);
}

void MigLedger::RemoveNode(const NodeName& node) {
  if (!nodes_.contains(node)) return;
  Unindex(node);
  nodes_.erase(node);
  std::erase_if(pods_, [&](const auto& kv) { return kv.second.node == node; });
}

const MigNode* MigLedger::Find(std::string_view node) const {
  const std::optional<int32_t> slot =
      index_.FindWith(node, [this](int32_t i) { return std::string_view(slots_[static_cast<size_t>(i)]->first.str()); });
  return slot ? &slots_[static_cast<size_t>(*slot)]->second : nullptr;
}

Status MigLedger::Allocate(const PodUid& pod, const NodeName& node, const std::vector<int>& devices) {
  if (pods_.contains(pod)) return AlreadyExistsError(fmt::format("pod {} already holds MIG devices", pod.str()));
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return NotFoundError(fmt::format("node {} has no MIG devices", node.str()));
  if (devices.empty()) return InvalidArgumentError("no MIG devices to allocate");
  if (!it->second.Take(devices, pod)) {
    return FailedPreconditionError(fmt::format("MIG devices for pod {} on node {} are out of range or held",
                                               pod.str(), node.str()));
  }
  pods_[pod] = MigHolding{node, devices};
  return OkStatus();
}

Status MigLedger::Release(const PodUid& pod) {
  auto it = pods_.find(pod);
  if (it == pods_.end()) return NotFoundError(fmt::format("pod {} holds no MIG devices", pod.str()));
  auto node = nodes_.find(it->second.node);
  if (node != nodes_.end()) node->second.Release(pod);
  pods_.erase(it);
  return OkStatus();
}

const MigHolding* MigLedger::FindPod(const PodUid& pod) const {
  auto it = pods_.find(pod);
  return it == pods_.end() ? nullptr : &it->second;
}

int MigLedger::TotalCompute() const {
  int n = 0;
  for (const auto& [name, node] : nodes_) n += node.TotalCompute();
  return n;
}

int MigLedger::UsedCompute() const {
  int n = 0;
  for (const auto& [name, node] : nodes_)
    for (size_t i = 0; i < node.slices().size(); ++i) n += node.holder(i).empty() ? 0 : node.slices()[i].compute_slices;
  return n;
}

int MigLedger::HeldDevices() const {
  int n = 0;
  for (const auto& [pod, holding] : pods_) n += static_cast<int>(holding.devices.size());
  return n;
}

}  // namespace phalanx::placement
