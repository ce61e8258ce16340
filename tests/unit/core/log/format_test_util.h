// Helpers for formatter tests: records at a fixed time, encoded like PHX_LOG_* does.
#pragma once

#include <chrono>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

#include <spdlog/details/log_msg.h>
#include <spdlog/formatter.h>

#include "core/log/field.h"
#include "core/log/record_codec.h"

namespace phalanx::log::testing {

// 2026-11-22T03:04:05.123Z
inline std::chrono::system_clock::time_point FixedTime() {
  using namespace std::chrono;
  return sys_days{year{2026} / November / 22} + hours{3} + minutes{4} + seconds{5} +
         milliseconds{123};
}

inline std::string FormatRecord(spdlog::formatter& formatter, std::string_view logger,
                                spdlog::level::level_enum level, std::string_view message,
                                std::initializer_list<Field> fields = {}) {
  spdlog::memory_buf_t payload;
  internal::EncodeRecord(message, std::span<const Field>(fields.begin(), fields.size()),
                         payload);
  spdlog::details::log_msg msg(FixedTime(), spdlog::source_loc{},
                               spdlog::string_view_t(logger.data(), logger.size()), level,
                               spdlog::string_view_t(payload.data(), payload.size()));
  spdlog::memory_buf_t out;
  formatter.format(msg, out);
  return std::string(out.data(), out.size());
}

inline std::string FormatPlain(spdlog::formatter& formatter, std::string_view message) {
  spdlog::details::log_msg msg(FixedTime(), spdlog::source_loc{}, "plain", spdlog::level::warn,
                               spdlog::string_view_t(message.data(), message.size()));
  spdlog::memory_buf_t out;
  formatter.format(msg, out);
  return std::string(out.data(), out.size());
}

}  // namespace phalanx::log::testing
