// Ledger (ledger.h): charging whole GPUs to pods: a pod's real devices (confirmed by the device
// plugin, committed by its devices annotation) win over an assumption; pods that cannot be charged
// yet wait for their node.
#include "extender/state/ledger.h"

#include <algorithm>
#include <bit>

#include <fmt/format.h>

namespace phalanx::extender {

using placement::GpuMask;

std::optional<GpuMask> Ledger::RealDevices(const PodRecord& rec, const NodeRecord& node, Holding* kind) const {
  if (!node.topology_known) return std::nullopt;
  GpuMask confirmed = 0;
  for (const auto& [id, dev] : node.info.devices) {
    if (dev.pod_uid != rec.info.uid.str()) continue;
    auto it = node.index_of_uuid.find(id.substr(0, id.find("::")));
    if (it != node.index_of_uuid.end()) confirmed |= GpuMask{1} << it->second;
  }
  if (confirmed) {
    *kind = Holding::kConfirmed;
    return confirmed;
  }
  if (!rec.info.devices) return std::nullopt;
  GpuMask committed = 0;
  for (const auto& [container, ids] : *rec.info.devices) {
    for (const std::string& id : ids) {
      auto it = node.index_of_uuid.find(id.substr(0, id.find("::")));
      if (it == node.index_of_uuid.end()) return std::nullopt;  // devices of another node: not trusted
      committed |= GpuMask{1} << it->second;
    }
  }
  if (!committed) return std::nullopt;
  *kind = Holding::kCommitted;
  return committed;
}

void Ledger::Uncharge(PodRecord& rec) {
  if (mig_.Release(rec.info.uid).ok() || mig_holders_.contains(rec.info.uid)) {  // MIG devices: apart from whole GPUs
    mig_holders_.erase(rec.info.uid);
    NoteMigChange(rec.info.uid);
  }
  if (rec.holding == Holding::kNone) return;
  (void)state_.Release(rec.info.uid);
  ++release_epoch_;
  rec.holding = Holding::kNone;
  rec.node = NodeName();
  rec.gpus = 0;
}

void Ledger::Charge(PodRecord& rec) {
  ChargeNow(rec);
  const PodInfo& p = rec.info;
  const bool mig_waits = !ChargeMig(rec);
  if ((rec.holding == Holding::kNone && !p.node_name.empty() && p.gpus > 0 && !p.Terminal()) || mig_waits) {
    waiting_[NodeName(p.node_name)].insert(p.uid);  // charged again when the node changes
  }
}

void Ledger::Unwait(const PodInfo& p) {
  if (p.node_name.empty()) return;
  auto it = waiting_.find(NodeName(p.node_name));
  if (it == waiting_.end()) return;
  it->second.erase(p.uid);
  if (it->second.empty()) waiting_.erase(it);
}

void Ledger::ChargeNow(PodRecord& rec) {
  const PodInfo& p = rec.info;
  if (rec.holding != Holding::kNone || p.node_name.empty() || p.gpus <= 0 || p.Terminal()) return;
  const NodeName node_name(p.node_name);
  auto nit = nodes_.find(node_name);
  if (nit == nodes_.end()) return;  // charged when the node appears
  auto idx = state_.FindNode(node_name);
  if (!idx) return;

  // A planned gang member bound where its plan put it: its reservation becomes its allocation.
  if (p.IsGangMember()) {
    auto git = gangs_.find(p.Gang());
    if (git != gangs_.end() && git->second.plan) {
      auto ait = git->second.assignment.find(p.uid);
      if (ait != git->second.assignment.end() &&
          git->second.plan->members[static_cast<size_t>(ait->second)].node == node_name) {
        const auto* res = state_.FindReservation(git->first);
        if (res && !res->committed[static_cast<size_t>(ait->second)] &&
            state_.Commit(git->first, ait->second, p.uid, p.priority).ok()) {
          rec.holding = Holding::kAssumed;
          rec.node = node_name;
          rec.gpus = res ? git->second.plan->members[static_cast<size_t>(ait->second)].gpus : 0;
          Holding kind = Holding::kAssumed;
          if (RealDevices(rec, nit->second, &kind) == rec.gpus) rec.holding = kind;
          return;
        }
      }
    }
  }

  Holding kind = Holding::kAssumed;
  std::optional<GpuMask> real = RealDevices(rec, nit->second, &kind);
  if (real) {
    // Real devices win over assumptions: move assumed holders out of the way.
    std::vector<PodUid> moved;
    for (const auto* alloc : state_.node(*idx).pods) {
      if (!(alloc->gpus & *real)) continue;
      auto pit = pods_.find(alloc->pod);
      if (pit != pods_.end() && pit->second.holding == Holding::kAssumed) moved.push_back(alloc->pod);
    }
    for (const PodUid& uid : moved) Uncharge(pods_.at(uid));
    if (state_.Allocate(p.uid, node_name, *real, p.priority).ok()) {
      rec.holding = kind;
      rec.node = node_name;
      rec.gpus = *real;
      for (const PodUid& uid : moved) Charge(pods_.at(uid));
      return;
    }
    ++warnings_;  // collides with another real holder or a reservation: fall back to counting
    for (const PodUid& uid : moved) Charge(pods_.at(uid));
  }
  const auto& ns = state_.node(*idx);
  const GpuMask avail = ns.free;
  const int want = std::min(p.gpus, std::popcount(avail));
  if (want <= 0) {
    ++warnings_;  // bound to a node the ledger sees as full: nothing left to charge
    return;
  }
  if (want < p.gpus) ++warnings_;
  GpuMask mask = 0;
  if (ns.spec.bandwidth) {
    auto choice = placement::ChooseDeviceSet(*ns.spec.bandwidth, {.count = want, .available = avail});
    if (choice.ok()) {
      for (int g : choice->gpus) mask |= GpuMask{1} << g;
    }
  }
  if (!mask) {
    GpuMask rest = avail;
    for (int i = 0; i < want; ++i) {
      const GpuMask low = rest & (~rest + 1);
      mask |= low;
      rest &= ~low;
    }
  }
  if (state_.Allocate(p.uid, node_name, mask, p.priority).ok()) {
    rec.holding = Holding::kAssumed;
    rec.node = node_name;
    rec.gpus = mask;
  }
}

Status Ledger::AssumePod(const PodUid& uid, const NodeName& node, GpuMask gpus) {
  auto it = pods_.find(uid);
  if (it == pods_.end()) return NotFoundError(fmt::format("pod {} is not in the ledger", uid.str()));
  PodRecord& rec = it->second;
  Uncharge(rec);
  PHX_RETURN_IF_ERROR(state_.Allocate(uid, node, gpus, rec.info.priority));
  rec.info.node_name = node.str();
  rec.holding = Holding::kAssumed;
  rec.node = node;
  rec.gpus = gpus;
  return OkStatus();
}

}  // namespace phalanx::extender
