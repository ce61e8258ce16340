// HealthTable: the health of every physical device (GPU or MIG UUID) of the node, shared
// by the health monitor (writer), the kubelet servers (ListAndWatch) and the publisher.
//
// A device is Unhealthy when its own entry or its parent GPU's entry is. Every change
// bumps version() and calls the subscribers synchronously on the writer's thread, outside
// the lock, so a ListAndWatch update is pushed within microseconds of the event (target
// ≤ 100 ms, bench/device-plugin). Subscribers must not block.
// Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "core/base/clock.h"

namespace phalanx::device_plugin {

struct DeviceHealth {
  bool healthy = true;
  std::string reason;               // "XID 79", "GPU is lost"; empty when healthy
  unsigned long long xid = 0;       // last critical XID, 0 if none
  MonotonicTime since{};            // when it became unhealthy (or was last hit)
};

class HealthTable {
 public:
  using Listener = std::function<void()>;

  // Marks `uuid` unhealthy (or refreshes `since` if it already is). Returns true if the
  // health changed.
  bool SetUnhealthy(const std::string& uuid, std::string reason, unsigned long long xid,
                    MonotonicTime now);
  // Returns true if `uuid` was unhealthy.
  bool SetHealthy(const std::string& uuid);

  DeviceHealth Get(const std::string& uuid) const;
  // Health of a device given its own and its parent GPU's UUID.
  DeviceHealth Effective(const std::string& uuid, const std::string& parent_gpu) const;
  std::map<std::string, DeviceHealth> Unhealthy() const;
  uint64_t version() const;

  // Returns an id for Unsubscribe.
  int Subscribe(Listener listener);
  void Unsubscribe(int id);

 private:
  void Notify();

  mutable std::mutex mu_;
  std::map<std::string, DeviceHealth> unhealthy_;  // guarded by mu_
  uint64_t version_ = 0;                           // guarded by mu_
  std::mutex listeners_mu_;                        // held while calling listeners
  std::map<int, Listener> listeners_;              // guarded by listeners_mu_
  int next_id_ = 1;                                // guarded by listeners_mu_
};

}  // namespace phalanx::device_plugin
