#include "core/log/log.h"

#include "core/log/record_codec.h"

namespace phalanx::log {

void Log(spdlog::logger& logger, spdlog::level::level_enum level, std::string_view message,
         std::initializer_list<Field> fields) {
  if (!logger.should_log(level)) return;
  internal::Emit(logger, level, message, std::span<const Field>(fields.begin(), fields.size()));
}

namespace internal {

void Emit(spdlog::logger& logger, spdlog::level::level_enum level, std::string_view message,
          std::span<const Field> fields) {
  // Inline storage covers typical records (message + a few fields) without allocating.
  spdlog::memory_buf_t payload;
  EncodeRecord(message, fields, payload);
  logger.log(level, spdlog::string_view_t(payload.data(), payload.size()));
}

}  // namespace internal
}  // namespace phalanx::log
