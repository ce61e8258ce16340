// JsonFormatter: one JSON object per line, for log pipelines:
//
//   {"ts":"2026-11-22T03:04:05.123Z","level":"info","logger":"extender.gang",
//    "msg":"Bound gang members","gang":"ml/llama","nodes":4}
//
// Fixed keys first (ts, level, logger — omitted for an unnamed logger —, msg), then the
// record's fields in call order. Levels: trace debug info warn error critical.
// Strings are escaped per RFC 8259 (\" \\ \n \r \t \b \f, other control characters as
// \u00XX) and invalid UTF-8 is replaced by U+FFFD, so every line parses. Integers and
// finite doubles are JSON numbers; NaN and infinities, which JSON lacks, are the strings
// "NaN", "+Inf", "-Inf". Not thread-safe (spdlog calls it under the sink's mutex).
#pragma once

#include <memory>
#include <string_view>

#include <spdlog/formatter.h>

#include "core/log/utc_timestamp.h"

namespace phalanx::log {

class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override;
  std::unique_ptr<spdlog::formatter> clone() const override;

 private:
  internal::UtcTimestamp timestamp_;
};

namespace internal {
// Appends `s` as a quoted JSON string (escaped, invalid UTF-8 replaced by U+FFFD).
void AppendJsonString(spdlog::memory_buf_t& out, std::string_view s);
}  // namespace internal

}  // namespace phalanx::log
