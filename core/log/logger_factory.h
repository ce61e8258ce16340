// LoggerFactory: makes the named component loggers of a process (`extender.gang`,
// `device_plugin.health`), all writing to the same sinks in the same format at the same
// level. Components receive their logger by reference from main.cc (STYLE §2.5); nothing
// looks loggers up by name, so they are not put in spdlog's registry.
//
// The process-wide factory behind InitLogging()/MakeLogger() writes to stderr and
// starts as text at info, so loggers made before InitLogging() still work and are
// reconfigured by it. Tests build their own factory over a capturing sink.
// Thread-safe: all methods lock; loggers are spdlog's thread-safe (_mt) loggers as long
// as the sinks are _mt sinks.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <spdlog/formatter.h>
#include <spdlog/logger.h>

#include "core/base/status.h"
#include "core/log/log_options.h"

namespace phalanx::log {

class LoggerFactory {
 public:
  // `sinks` receive every record of every logger made here; their formatters are
  // replaced by the one for `options.format`.
  LoggerFactory(std::vector<spdlog::sink_ptr> sinks, const LogOptions& options);
  LoggerFactory(const LoggerFactory&) = delete;
  LoggerFactory& operator=(const LoggerFactory&) = delete;

  // A new logger named `name` over the shared sinks, at the current level.
  std::shared_ptr<spdlog::logger> MakeLogger(std::string name);

  // Switches format and level for the sinks and for every logger made so far that is
  // still alive. kInvalidArgument for a negative verbosity (nothing changes then).
  Status Reconfigure(const LogOptions& options);

  LogOptions options() const;

 private:
  mutable std::mutex mu_;
  const std::vector<spdlog::sink_ptr> sinks_;
  LogOptions options_;                                  // guarded by mu_
  std::vector<std::weak_ptr<spdlog::logger>> loggers_;  // guarded by mu_
};

// The formatter for `format`: TextFormatter or JsonFormatter.
std::unique_ptr<spdlog::formatter> MakeFormatter(LogFormat format);

// kInvalidArgument if verbosity < 0 or format is not a LogFormat value.
Status ValidateLogOptions(const LogOptions& options);

// Configures process logging (stderr) from the flags; call once in main() after parsing.
// Also makes spdlog's default logger (spdlog::info(...) from third-party code) share
// the same sink and format. kInvalidArgument as ValidateLogOptions.
Status InitLogging(const LogOptions& options);

// A component logger from the process-wide factory. Call from main.cc (or component
// construction) and pass the logger down.
std::shared_ptr<spdlog::logger> MakeLogger(std::string name);

}  // namespace phalanx::log
