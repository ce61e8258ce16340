#include "core/log/log_options.h"

#include <charconv>
#include <string>

#include <fmt/format.h>

namespace phalanx::log {

std::string_view LogFormatName(LogFormat format) {
  switch (format) {
    case LogFormat::kText: return "text";
    case LogFormat::kJson: return "json";
  }
  return "unknown";
}

Result<LogFormat> ParseLogFormat(std::string_view name) {
  if (name == "text") return LogFormat::kText;
  if (name == "json") return LogFormat::kJson;
  return InvalidArgumentError(fmt::format("must be \"text\" or \"json\", got \"{}\"", name));
}

spdlog::level::level_enum LevelForVerbosity(int verbosity) {
  if (verbosity >= 5) return spdlog::level::trace;
  if (verbosity >= 1) return spdlog::level::debug;
  return spdlog::level::info;
}

void AddLogFlags(CLI::App& app, LogOptions& options) {
  // CLI11 runs validators before the callback, so the callback only sees valid names.
  app.add_option_function<std::string>(
         "--log-format",
         [&options](const std::string& value) {
           Result<LogFormat> format = ParseLogFormat(value);
           if (format.ok()) options.format = *format;
         },
         "Log line format: text, or json (one JSON object per line)")
      ->check(CLI::Validator(
          [](std::string& value) -> std::string {
            Result<LogFormat> format = ParseLogFormat(value);
            return format.ok() ? std::string() : format.status().message();
          },
          "text|json", "LogFormat"))
      ->default_str(std::string(LogFormatName(options.format)));

  app.add_option("--v", options.verbosity,
                 "Log verbosity: 0 = info and above, 1-4 = debug, >= 5 = trace")
      ->check(CLI::Validator(
          [](std::string& value) -> std::string {
            int parsed = 0;
            const char* end = value.data() + value.size();
            auto [ptr, ec] = std::from_chars(value.data(), end, parsed);
            if (ec != std::errc() || ptr != end || parsed < 0) {
              return fmt::format("must be a non-negative integer, got \"{}\"", value);
            }
            return std::string();
          },
          "N>=0", "Verbosity"))
      ->default_str(std::to_string(options.verbosity));
}

}  // namespace phalanx::log
