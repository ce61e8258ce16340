#include "device-plugin/plugin/health_table.h"

namespace phalanx::device_plugin {

bool HealthTable::SetUnhealthy(const std::string& uuid, std::string reason,
                               unsigned long long xid, MonotonicTime now) {
  bool changed = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto [it, inserted] = unhealthy_.try_emplace(uuid);
    changed = inserted || it->second.reason != reason;
    it->second.healthy = false;
    it->second.reason = std::move(reason);
    if (xid != 0) it->second.xid = xid;
    it->second.since = now;
    if (changed) ++version_;
  }
  if (changed) Notify();
  return changed;
}

bool HealthTable::SetHealthy(const std::string& uuid) {
  bool changed = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    changed = unhealthy_.erase(uuid) > 0;
    if (changed) ++version_;
  }
  if (changed) Notify();
  return changed;
}

DeviceHealth HealthTable::Get(const std::string& uuid) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = unhealthy_.find(uuid);
  return it == unhealthy_.end() ? DeviceHealth{} : it->second;
}

DeviceHealth HealthTable::Effective(const std::string& uuid, const std::string& parent_gpu) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = unhealthy_.find(uuid);
  if (it != unhealthy_.end()) return it->second;
  it = unhealthy_.find(parent_gpu);
  return it == unhealthy_.end() ? DeviceHealth{} : it->second;
}

std::map<std::string, DeviceHealth> HealthTable::Unhealthy() const {
  std::lock_guard<std::mutex> lock(mu_);
  return unhealthy_;
}

uint64_t HealthTable::version() const {
  std::lock_guard<std::mutex> lock(mu_);
  return version_;
}

int HealthTable::Subscribe(Listener listener) {
  std::lock_guard<std::mutex> lock(listeners_mu_);
  int id = next_id_++;
  listeners_[id] = std::move(listener);
  return id;
}

void HealthTable::Unsubscribe(int id) {
  // Taking listeners_mu_ waits for a notification in progress, so after this returns the
  // listener is never called again.
  std::lock_guard<std::mutex> lock(listeners_mu_);
  listeners_.erase(id);
}

void HealthTable::Notify() {
  std::lock_guard<std::mutex> lock(listeners_mu_);
  for (auto& [id, l] : listeners_) l();
}

}  // namespace phalanx::device_plugin
