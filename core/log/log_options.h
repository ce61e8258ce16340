// Logging options shared by every daemon, and their command-line flags.
//
//   --log-format text|json   one human-readable line, or one JSON object per line
//   --v N                    Kubernetes (klog) convention: 0 = info and above,
//                            1-4 = debug, >= 5 = trace
// Pure, thread-compatible.
#pragma once

#include <string_view>

#include <CLI/CLI.hpp>
#include <spdlog/common.h>

#include "core/base/result.h"

namespace phalanx::log {

enum class LogFormat { kText, kJson };

struct LogOptions {
  LogFormat format = LogFormat::kText;
  int verbosity = 0;  // --v; negative values are rejected by AddLogFlags and InitLogging
};

// "text" / "json".
std::string_view LogFormatName(LogFormat format);
// Exact, lowercase names only; kInvalidArgument: `must be "text" or "json", got "xml"`.
Result<LogFormat> ParseLogFormat(std::string_view name);

// info for 0 (and below), debug for 1-4, trace for >= 5.
spdlog::level::level_enum LevelForVerbosity(int verbosity);

// Adds --log-format and --v to `app`, writing into `options` when parsed. Invalid values
// make app.parse() throw CLI::ValidationError("--log-format: must be \"text\" or \"json\",
// got \"xml\"") so main's usual CLI11_PARSE reports them and exits non-zero.
// `options` must outlive `app`'s parsing.
void AddLogFlags(CLI::App& app, LogOptions& options);

}  // namespace phalanx::log
