// UtcTimestamp: renders a record's wall-clock time as RFC 3339 UTC with milliseconds,
// "2026-11-22T03:04:05.123Z" (sortable, zone-free, what log pipelines parse).
// Caches the date-time part of the last second seen, so most records only format the
// milliseconds. Not thread-safe: each formatter owns one, and spdlog calls a sink's
// formatter under the sink's mutex.
#pragma once

#include <chrono>
#include <cstdint>

#include <spdlog/common.h>

namespace phalanx::log::internal {

class UtcTimestamp {
 public:
  void Append(std::chrono::system_clock::time_point time, spdlog::memory_buf_t& out);

 private:
  int64_t cached_second_ = INT64_MIN;
  char cached_[20] = {};  // "YYYY-MM-DDTHH:MM:SS"
};

}  // namespace phalanx::log::internal
