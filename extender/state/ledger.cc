// Ledger (ledger.h): construction, pod and TrainingJob intake, and the reads. Charging is in
// ledger_charging.cc, nodes in ledger_nodes.cc, gangs and plans in ledger_gangs.cc, MIG holdings
// and their change log in ledger_mig.cc, the debug dump in ledger_json.cc.
#include "extender/state/ledger.h"

namespace phalanx::extender {

using placement::GpuMask;

std::string_view HoldingName(Holding h) {
  switch (h) {
    case Holding::kNone: return "none";
    case Holding::kAssumed: return "assumed";
    case Holding::kCommitted: return "committed";
    case Holding::kConfirmed: return "confirmed";
  }
  return "?";
}

Ledger::Ledger(std::vector<std::string> levels) : state_(std::move(levels)) {}

void Ledger::UpsertPod(const PodInfo& info, MonotonicTime now) {
  auto it = pods_.find(info.uid);
  std::optional<PodRecord> old;
  if (it != pods_.end()) {
    old = it->second;
    Uncharge(it->second);
    Unwait(it->second.info);
    it->second.info = info;
  } else {
    it = pods_.emplace(info.uid, PodRecord{.info = info}).first;
    pod_by_name_[info.Key()] = info.uid;
  }
  UpdateGangMembership(old ? &*old : nullptr, it->second, now);
  Charge(it->second);
  if (!info.nominated_node.empty() && info.node_name.empty() && !info.deleting && !info.Terminal()) {
    nominated_.insert(info.uid);
  } else if (nominated_.erase(info.uid) > 0) {
    ++release_epoch_;  // its GPUs are no longer spoken for
  }
}

void Ledger::RemovePod(const PodUid& uid) {
  auto it = pods_.find(uid);
  if (it == pods_.end()) return;
  Uncharge(it->second);
  Unwait(it->second.info);
  RemoveFromGang(it->second.info);
  pod_by_name_.erase(it->second.info.Key());
  if (nominated_.erase(uid) > 0) ++release_epoch_;
  pods_.erase(it);
}

void Ledger::UpsertTrainingJob(const TrainingJobInfo& job) { jobs_[job.Key()] = job; }
void Ledger::RemoveTrainingJob(const std::string& key) { jobs_.erase(key); }

const PodRecord* Ledger::FindPod(const PodUid& uid) const {
  auto it = pods_.find(uid);
  return it == pods_.end() ? nullptr : &it->second;
}
const PodRecord* Ledger::FindPodByName(std::string_view key) const {
  auto it = pod_by_name_.find(std::string(key));
  return it == pod_by_name_.end() ? nullptr : FindPod(it->second);
}
const GangRecord* Ledger::FindGang(const GangKey& key) const {
  auto it = gangs_.find(key);
  return it == gangs_.end() ? nullptr : &it->second;
}
GangRecord* Ledger::MutableGang(const GangKey& key) {
  auto it = gangs_.find(key);
  return it == gangs_.end() ? nullptr : &it->second;
}
const NodeRecord* Ledger::FindNode(const NodeName& name) const {
  auto it = nodes_.find(name);
  return it == nodes_.end() ? nullptr : &it->second;
}
const TrainingJobInfo* Ledger::FindTrainingJob(const std::string& key) const {
  auto it = jobs_.find(key);
  return it == jobs_.end() ? nullptr : &it->second;
}

std::vector<std::string> Ledger::DeviceIds(const NodeName& node, GpuMask gpus) const {
  std::vector<std::string> ids;
  const NodeRecord* rec = FindNode(node);
  if (!rec || !rec->topology_known) return ids;
  for (int g : placement::GpuList(gpus)) {
    if (static_cast<size_t>(g) < rec->uuids.size()) ids.push_back(rec->uuids[static_cast<size_t>(g)]);
  }
  return ids;
}

}  // namespace phalanx::extender
