#include "core/placement/mig_ledger.h"

#include <algorithm>

#include <fmt/format.h>

namespace phalanx::placement {

MigLedger::MigLedger(const MigLedger& other)
    : nodes_(other.nodes_), priorities_(other.priorities_), pods_(other.pods_) {
  Reindex();
}

MigLedger& MigLedger::operator=(const MigLedger& other) {
  if (this != &other) {
    nodes_ = other.nodes_;
    priorities_ = other.priorities_;
    pods_ = other.pods_;
    Reindex();
  }
  return *this;
}

void MigLedger::Index(Entry& entry) {
  std::vector<int32_t>& priority = priorities_[entry.first];
  if (priority.size() != entry.second.slices().size()) priority.assign(entry.second.slices().size(), kNotHeld);  // new
  const Slot s{&entry, &priority, priority.empty() ? kNotHeld : *std::min_element(priority.begin(), priority.end())};
  int32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
    slots_[static_cast<size_t>(slot)] = s;
  } else {
    slot = static_cast<int32_t>(slots_.size());
    slots_.push_back(s);
  }
  index_.Insert(entry.first.str(), slot);
}

void MigLedger::Unindex(const NodeName& node) {
  auto name_of = [this](int32_t i) { return std::string_view(slots_[static_cast<size_t>(i)].entry->first.str()); };
  const std::optional<int32_t> slot = index_.FindWith(node.str(), name_of);
  if (!slot) return;
  index_.Erase(node.str(), name_of);
  slots_[static_cast<size_t>(*slot)] = Slot{};
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
    std::vector<int32_t> priority(fresh.slices().size(), kNotHeld);
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
      for (int d : m->second) {
        const auto i = static_cast<size_t>(d);
        if (fresh.slices()[i].healthy) priority[i] = it->second.priority;
      }
      ++it;
    }
    old->second = std::move(fresh);
    priorities_[node] = std::move(priority);  // same vector object: the slot's pointer holds
    UpdateLowest(node);
    return;
  }
  Index(*nodes_.emplace(node, std::move(fresh)).first);
}

void MigLedger::RemoveNode(const NodeName& node) {
  if (!nodes_.contains(node)) return;
  Unindex(node);
  nodes_.erase(node);
  priorities_.erase(node);
  std::erase_if(pods_, [&](const auto& kv) { return kv.second.node == node; });
}

const MigLedger::Slot* MigLedger::FindSlot(std::string_view node) const {
  const std::optional<int32_t> slot = index_.FindWith(
      node, [this](int32_t i) { return std::string_view(slots_[static_cast<size_t>(i)].entry->first.str()); });
  return slot ? &slots_[static_cast<size_t>(*slot)] : nullptr;
}

const MigNode* MigLedger::Find(std::string_view node) const {
  const Slot* slot = FindSlot(node);
  return slot ? &slot->entry->second : nullptr;
}

MigLedger::NodeView MigLedger::View(std::string_view node) const {
  const Slot* slot = FindSlot(node);
  if (slot == nullptr) return {};
  return {&slot->entry->second, std::span<const int32_t>(*slot->priority), slot->lowest_held};
}

void MigLedger::UpdateLowest(const NodeName& node) {
  const Slot* found = FindSlot(node.str());
  if (found == nullptr) return;
  Slot& slot = slots_[static_cast<size_t>(found - slots_.data())];
  slot.lowest_held = slot.priority->empty() ? kNotHeld : *std::min_element(slot.priority->begin(), slot.priority->end());
}

Status MigLedger::Allocate(const PodUid& pod, const NodeName& node, const std::vector<int>& devices, int priority) {
  if (pods_.contains(pod)) return AlreadyExistsError(fmt::format("pod {} already holds MIG devices", pod.str()));
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return NotFoundError(fmt::format("node {} has no MIG devices", node.str()));
  if (devices.empty()) return InvalidArgumentError("no MIG devices to allocate");
  if (!it->second.Take(devices, pod)) {
    return FailedPreconditionError(fmt::format("MIG devices for pod {} on node {} are out of range or held",
                                               pod.str(), node.str()));
  }
  pods_[pod] = MigHolding{node, devices, priority};
  std::vector<int32_t>& p = priorities_[node];
  for (int d : devices) {
    const auto i = static_cast<size_t>(d);
    if (it->second.slices()[i].healthy) p[i] = priority;
  }
  UpdateLowest(node);
  return OkStatus();
}

Status MigLedger::Release(const PodUid& pod) {
  auto it = pods_.find(pod);
  if (it == pods_.end()) return NotFoundError(fmt::format("pod {} holds no MIG devices", pod.str()));
  auto node = nodes_.find(it->second.node);
  if (node != nodes_.end()) node->second.Release(pod);
  if (auto p = priorities_.find(it->second.node); p != priorities_.end()) {
    for (int d : it->second.devices) p->second[static_cast<size_t>(d)] = kNotHeld;
    UpdateLowest(it->second.node);
  }
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
