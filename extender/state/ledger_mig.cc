// Ledger (ledger.h): MIG holdings (charged apart from whole GPUs) and their change log, which lets
// the admission pass re-book only the MIG pods that changed (MigChangedSince).
#include "extender/state/ledger.h"

#include <algorithm>

#include "extender/mig/mig_devices.h"

namespace phalanx::extender {

bool Ledger::ChargeMig(const PodRecord& rec) {
  const PodInfo& p = rec.info;
  if (p.mig.empty() || p.node_name.empty() || p.Terminal() || mig_.FindPod(p.uid)) return true;
  const NodeName node(p.node_name);
  const placement::MigNode* mig = mig_.Find(node);
  auto nit = nodes_.find(node);
  if (!mig || nit == nodes_.end()) return false;  // charged when the node (or its MIG layout) appears
  const std::vector<int> devices = MigDevicesFor(*mig, nit->second.info, p);
  if (devices.empty() || !mig_.Allocate(p.uid, node, devices, p.priority).ok()) {
    ++warnings_;  // bound where the ledger sees no free device of its profile
    return false;
  }
  mig_holders_.insert(p.uid);
  NoteMigChange(p.uid);
  return true;
}

Status Ledger::AssumeMig(const PodUid& uid, const NodeName& node, const std::vector<int>& devices, int priority) {
  if (const placement::MigHolding* h = mig_.FindPod(uid);
      h && h->node == node && h->devices == devices && h->priority == priority) {
    return OkStatus();
  }
  (void)mig_.Release(uid);
  NoteMigChange(uid);
  Status st = mig_.Allocate(uid, node, devices, priority);
  if (st.ok()) mig_holders_.insert(uid);
  else mig_holders_.erase(uid);
  return st;
}

void Ledger::NoteMigChange(const PodUid& uid) {
  mig_log_.push_back({++mig_version_, uid});
  if (mig_log_.size() > kMigLogLength) mig_log_.pop_front();
}

void Ledger::NoteMigNode(const NodeName& node) {
  const placement::MigNode* mig = mig_.Find(node);
  if (mig == nullptr) return;
  for (size_t i = 0; i < mig->slices().size(); ++i) {
    if (!mig->holder(i).empty()) NoteMigChange(mig->holder(i));
  }
}

std::optional<std::vector<PodUid>> Ledger::MigChangedSince(uint64_t since) const {
  std::vector<PodUid> out;
  if (since == mig_version_) return out;
  if (since > mig_version_ || mig_log_.empty() || mig_log_.front().version > since + 1) return std::nullopt;
  auto it = std::lower_bound(mig_log_.begin(), mig_log_.end(), since + 1,
                             [](const MigChange& c, uint64_t v) { return c.version < v; });
  for (; it != mig_log_.end(); ++it) out.push_back(it->pod);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace phalanx::extender
