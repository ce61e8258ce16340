#include "device-plugin/usage/usage_snapshot.h"

#include <cmath>
#include <ctime>

namespace phalanx::device_plugin {

UsageSummaries Summarise(const UsageSnapshot& snapshot) {
  UsageSummaries out;
  constexpr uint64_t kMiB = 1024 * 1024;
  for (const DeviceUsage& d : snapshot.devices) {
    DeviceUsageSummary s;
    if (d.sm_util_5m) s.sm_util_5m = std::round(*d.sm_util_5m);
    if (d.sample.memory_used_bytes) s.memory_used_mib = (*d.sample.memory_used_bytes + kMiB / 2) / kMiB;
    if (s.sm_util_5m || s.memory_used_mib) out[d.sample.uuid] = s;
  }
  return out;
}

std::string FormatRfc3339(SystemTime t) {
  const std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::optional<SystemTime> ParseRfc3339(const std::string& text) {
  std::tm tm{};
  const char* end = strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (end == nullptr) return std::nullopt;
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

}  // namespace phalanx::device_plugin
