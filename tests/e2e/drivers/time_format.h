// RFC 3339 UTC timestamps with second precision, as Kubernetes writes them.
#pragma once

#include <chrono>
#include <ctime>
#include <string>

namespace phalanx::e2e {

inline std::string Rfc3339(std::chrono::system_clock::time_point t) {
  const std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

inline std::string NowRfc3339() { return Rfc3339(std::chrono::system_clock::now()); }

// Parses "YYYY-MM-DDTHH:MM:SS[.frac]Z"; the epoch when malformed.
inline std::chrono::system_clock::time_point ParseRfc3339(const std::string& text) {
  std::tm tm{};
  if (!strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm)) return {};
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

}  // namespace phalanx::e2e
