// Structured logging calls (STYLE §2.5): a constant, capitalised, past-tense message plus
// key/values, rendered by the sink's formatter as text (`msg k=v`) or JSON fields.
//
//   PHX_LOG_INFO(logger, "Bound gang members", kv("gang", gang), kv("nodes", n));
//   PHX_LOG_WARN(*logger, "Failed to patch node", kv("node", node), kv("err", status));
//
// `kv` needs no qualification inside the macros.
// `logger` may be a spdlog::logger&, a spdlog::logger* or a std::shared_ptr<spdlog::logger>.
// The macros check the level first: when it is disabled, no argument (not even kv(...)
// or a value's ToString()) is evaluated. Log()/LogInfo()... take ready-made fields
// (`LogInfo(*logger, "Bound gang members", {{"gang", g}, {"nodes", n}})`) and check the
// level too, but their arguments are built by the caller before the call.
// Thread-safe as the logger is.
#pragma once

#include <initializer_list>
#include <memory>
#include <span>
#include <string_view>
#include <utility>

#include <spdlog/logger.h>

#include "core/log/field.h"

namespace phalanx::log {

void Log(spdlog::logger& logger, spdlog::level::level_enum level, std::string_view message,
         std::initializer_list<Field> fields = {});

inline void LogTrace(spdlog::logger& l, std::string_view m, std::initializer_list<Field> f = {}) {
  Log(l, spdlog::level::trace, m, f);
}
inline void LogDebug(spdlog::logger& l, std::string_view m, std::initializer_list<Field> f = {}) {
  Log(l, spdlog::level::debug, m, f);
}
inline void LogInfo(spdlog::logger& l, std::string_view m, std::initializer_list<Field> f = {}) {
  Log(l, spdlog::level::info, m, f);
}
inline void LogWarn(spdlog::logger& l, std::string_view m, std::initializer_list<Field> f = {}) {
  Log(l, spdlog::level::warn, m, f);
}
inline void LogError(spdlog::logger& l, std::string_view m, std::initializer_list<Field> f = {}) {
  Log(l, spdlog::level::err, m, f);
}

namespace internal {

// Encodes and logs without checking the level (the caller did).
void Emit(spdlog::logger& logger, spdlog::level::level_enum level, std::string_view message,
          std::span<const Field> fields);

inline spdlog::logger& Deref(spdlog::logger& logger) { return logger; }
inline spdlog::logger& Deref(spdlog::logger* logger) { return *logger; }
inline spdlog::logger& Deref(const std::shared_ptr<spdlog::logger>& logger) { return *logger; }

template <typename... Fields>
void EmitFields(spdlog::logger& logger, spdlog::level::level_enum level,
                std::string_view message, Fields&&... fields) {
  if constexpr (sizeof...(Fields) == 0) {
    Emit(logger, level, message, {});
  } else {
    const Field array[] = {Field(std::forward<Fields>(fields))...};
    Emit(logger, level, message, array);
  }
}

}  // namespace internal
}  // namespace phalanx::log

#define PHX_LOG_AT_(phx_logger, phx_level, phx_message, ...)                              \
  do {                                                                                     \
    ::spdlog::logger& phx_log_logger_ = ::phalanx::log::internal::Deref(phx_logger);       \
    if (phx_log_logger_.should_log(phx_level)) {                                           \
      using ::phalanx::log::kv; /* callers write kv(...) in any namespace */               \
      ::phalanx::log::internal::EmitFields(phx_log_logger_, phx_level,                     \
                                           phx_message __VA_OPT__(, ) __VA_ARGS__);        \
    }                                                                                      \
  } while (0)

#define PHX_LOG_TRACE(phx_logger, phx_message, ...) \
  PHX_LOG_AT_(phx_logger, ::spdlog::level::trace, phx_message __VA_OPT__(, ) __VA_ARGS__)
#define PHX_LOG_DEBUG(phx_logger, phx_message, ...) \
  PHX_LOG_AT_(phx_logger, ::spdlog::level::debug, phx_message __VA_OPT__(, ) __VA_ARGS__)
#define PHX_LOG_INFO(phx_logger, phx_message, ...) \
  PHX_LOG_AT_(phx_logger, ::spdlog::level::info, phx_message __VA_OPT__(, ) __VA_ARGS__)
#define PHX_LOG_WARN(phx_logger, phx_message, ...) \
  PHX_LOG_AT_(phx_logger, ::spdlog::level::warn, phx_message __VA_OPT__(, ) __VA_ARGS__)
#define PHX_LOG_ERROR(phx_logger, phx_message, ...) \
  PHX_LOG_AT_(phx_logger, ::spdlog::level::err, phx_message __VA_OPT__(, ) __VA_ARGS__)
