// ElectorLeadership: Leadership backed by the Lease `phalanx-extender` (docs/architecture.md §2.5, "one
// active extender"). The Extender asks IsLeader() before it admits, lifts gates or binds.
// This replica is the active one only while it holds the Lease AND has been activated:
// the daemon activates it once the informers have synced and committed gangs were
// recovered, so a fresh leader never plans on a half-listed ledger.
// Without leader election (--leader-elect=false) holding the Lease is assumed.
// Thread-safe.
#pragma once

#include <atomic>

#include "core/kube/leader_election.h"
#include "extender/extender.h"

namespace phalanx::extender {

class ElectorLeadership final : public Leadership {
 public:
  // Set once, before the Extender runs; null = no election (single replica).
  void Attach(const kube::LeaderElector* elector) { elector_.store(elector); }
  bool HoldsLease() const {
    const kube::LeaderElector* e = elector_.load();
    return e == nullptr || e->IsLeader();
  }
  void SetActive(bool active) { active_.store(active); }
  bool active() const { return active_.load(); }
  bool IsLeader() const override { return active_.load() && HoldsLease(); }

 private:
  std::atomic<const kube::LeaderElector*> elector_{nullptr};
  std::atomic<bool> active_{false};
};

}  // namespace phalanx::extender
