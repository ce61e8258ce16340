#include "device-plugin/usage/usage_history.h"

namespace phalanx::device_plugin {

void UsageHistory::Add(const std::string& device, SystemTime at, std::optional<double> sm_util) {
  if (!sm_util) return;
  readings_[device].push_back(Reading{at, *sm_util});
}

std::optional<double> UsageHistory::Mean(const std::string& device, SystemTime now) const {
  auto it = readings_.find(device);
  if (it == readings_.end()) return std::nullopt;
  double sum = 0;
  int n = 0;
  for (const Reading& r : it->second) {
    if (now - r.at > window_) continue;
    sum += r.sm;
    ++n;
  }
  if (n == 0) return std::nullopt;
  return sum / n;
}

void UsageHistory::Trim(SystemTime now) {
  for (auto it = readings_.begin(); it != readings_.end();) {
    auto& q = it->second;
    while (!q.empty() && now - q.front().at > window_) q.pop_front();
    it = q.empty() ? readings_.erase(it) : std::next(it);
  }
}

}  // namespace phalanx::device_plugin
