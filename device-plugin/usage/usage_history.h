// UsageHistory: each device's SM utilisation over a trailing window (default 5 minutes), for
// the mean published in phalanx.io/gpu-state ("smUtil5m") and phalanx_gpu_sm_utilisation_5m.
// Only known readings count; a device without any in the window has no mean. Devices not
// sampled in a pass keep their history until it ages out. Thread-compatible.
#pragma once

#include <chrono>
#include <deque>
#include <map>
#include <optional>
#include <string>

#include "core/base/clock.h"

namespace phalanx::device_plugin {

class UsageHistory {
 public:
  explicit UsageHistory(std::chrono::milliseconds window = std::chrono::minutes(5)) : window_(window) {}

  void Add(const std::string& device, SystemTime at, std::optional<double> sm_util);
  // Mean of the readings within the window ending at `now`.
  std::optional<double> Mean(const std::string& device, SystemTime now) const;
  // Drops readings older than the window (and devices left without any).
  void Trim(SystemTime now);

 private:
  struct Reading {
    SystemTime at;
    double sm;
  };
  std::chrono::milliseconds window_;
  std::map<std::string, std::deque<Reading>> readings_;
};

}  // namespace phalanx::device_plugin
