// TextFormatter: one compact, human-readable line per record (klog-like, UTC):
//
//   2026-11-22T03:04:05.123Z I extender.gang] Bound gang members gang=ml/llama nodes=4
//
// Level letters: T(race) D(ebug) I(nfo) W(arn) E(rror) C(ritical). Control characters
// in the message are escaped (\n, \t, \xNN) so a record is always exactly one line.
// A string value is written bare unless it is empty or contains a space, `"`, `=`, `\`
// or a control character; then it is double-quoted with \\ \" \n \r \t \xNN escapes
// (`err="409 Conflict"`). Numbers and bools are written bare; doubles use the shortest
// round-trip form. Fields come from PHX_LOG_* (record_codec.h); plain messages work too.
// Not thread-safe (spdlog calls it under the sink's mutex); clone() per sink.
#pragma once

#include <memory>

#include <spdlog/formatter.h>

#include "core/log/utc_timestamp.h"

namespace phalanx::log {

class TextFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override;
  std::unique_ptr<spdlog::formatter> clone() const override;

 private:
  internal::UtcTimestamp timestamp_;
};

}  // namespace phalanx::log
