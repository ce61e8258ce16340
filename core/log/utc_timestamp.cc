#include "core/log/utc_timestamp.h"

#include <ctime>

#include <fmt/format.h>

namespace phalanx::log::internal {

void UtcTimestamp::Append(std::chrono::system_clock::time_point time,
                          spdlog::memory_buf_t& out) {
  using std::chrono::floor;
  using std::chrono::milliseconds;
  using std::chrono::seconds;
  const auto whole = floor<seconds>(time);
  const int64_t second = whole.time_since_epoch().count();
  if (second != cached_second_) {
    const std::time_t t = static_cast<std::time_t>(second);
    std::tm tm{};
    gmtime_r(&t, &tm);
    fmt::format_to_n(cached_, sizeof(cached_), "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                     tm.tm_sec);
    cached_second_ = second;
  }
  out.append(cached_, cached_ + sizeof(cached_) - 1);
  const auto ms = static_cast<int>(floor<milliseconds>(time - whole).count());
  const char tail[5] = {'.', static_cast<char>('0' + ms / 100),
                        static_cast<char>('0' + ms / 10 % 10), static_cast<char>('0' + ms % 10),
                        'Z'};
  out.append(tail, tail + sizeof(tail));
}

}  // namespace phalanx::log::internal
