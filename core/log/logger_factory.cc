#include "core/log/logger_factory.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "core/log/json_formatter.h"
#include "core/log/text_formatter.h"

namespace phalanx::log {
namespace {

void ApplyFormat(const std::vector<spdlog::sink_ptr>& sinks, LogFormat format) {
  for (const spdlog::sink_ptr& sink : sinks) sink->set_formatter(MakeFormatter(format));
}

LoggerFactory& ProcessFactory() {
  // Leaked on purpose: loggers may still log from static destructors at exit.
  static LoggerFactory* factory = new LoggerFactory(
      {std::make_shared<spdlog::sinks::stderr_sink_mt>()}, LogOptions{});
  return *factory;
}

}  // namespace

std::unique_ptr<spdlog::formatter> MakeFormatter(LogFormat format) {
  if (format == LogFormat::kJson) return std::make_unique<JsonFormatter>();
  return std::make_unique<TextFormatter>();
}

Status ValidateLogOptions(const LogOptions& options) {
  if (options.verbosity < 0) {
    return InvalidArgumentError(
        fmt::format("log verbosity must be >= 0, got {}", options.verbosity));
  }
  if (options.format != LogFormat::kText && options.format != LogFormat::kJson) {
    return InvalidArgumentError(
        fmt::format("unknown log format {}", static_cast<int>(options.format)));
  }
  return OkStatus();
}

LoggerFactory::LoggerFactory(std::vector<spdlog::sink_ptr> sinks, const LogOptions& options)
    : sinks_(std::move(sinks)), options_(options) {
  ApplyFormat(sinks_, options_.format);
}

std::shared_ptr<spdlog::logger> LoggerFactory::MakeLogger(std::string name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto logger = std::make_shared<spdlog::logger>(std::move(name), sinks_.begin(), sinks_.end());
  logger->set_level(LevelForVerbosity(options_.verbosity));
  std::erase_if(loggers_, [](const std::weak_ptr<spdlog::logger>& l) { return l.expired(); });
  loggers_.push_back(logger);
  return logger;
}

Status LoggerFactory::Reconfigure(const LogOptions& options) {
  PHX_RETURN_IF_ERROR(ValidateLogOptions(options));
  std::lock_guard<std::mutex> lock(mu_);
  options_ = options;
  ApplyFormat(sinks_, options_.format);
  const spdlog::level::level_enum level = LevelForVerbosity(options_.verbosity);
  for (const auto& weak : loggers_) {
    if (auto logger = weak.lock()) logger->set_level(level);
  }
  return OkStatus();
}

LogOptions LoggerFactory::options() const {
  std::lock_guard<std::mutex> lock(mu_);
  return options_;
}

Status InitLogging(const LogOptions& options) {
  LoggerFactory& factory = ProcessFactory();
  PHX_RETURN_IF_ERROR(factory.Reconfigure(options));
  spdlog::set_default_logger(factory.MakeLogger(""));
  return OkStatus();
}

std::shared_ptr<spdlog::logger> MakeLogger(std::string name) {
  return ProcessFactory().MakeLogger(std::move(name));
}

}  // namespace phalanx::log
