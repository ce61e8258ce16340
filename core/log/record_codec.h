// How a structured record travels through spdlog to our formatters.
//
// spdlog 1.10 carries only a message string per record, so PHX_LOG_* encode the message
// and its fields into that string, and TextFormatter / JsonFormatter decode them (the
// fields travel with the record, so backtraces and any sink see the same data). Layout,
// all integers little-endian:
//   "\x1fPHX" u32 msg_len msg  { u8 kind  u32 key_len key  value }*
//   value: 's' u32 len bytes | 'i' int64 | 'u' uint64 | 'd' double bits | 'b' u8
// A payload without the marker (plain logger->info("...") calls, third-party code) is a
// message without fields; so is a payload that fails to decode (the marker is a control
// character, so human text practically never starts with it). Internal to core/log.
// Pure, thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include <spdlog/common.h>

#include "core/log/field.h"

namespace phalanx::log::internal {

void EncodeRecord(std::string_view message, std::span<const Field> fields,
                  spdlog::memory_buf_t& out);

// A decoded field: `text` for strings, the matching number otherwise.
struct FieldView {
  enum class Kind : char { kString = 's', kInt = 'i', kUint = 'u', kDouble = 'd', kBool = 'b' };
  std::string_view key;
  Kind kind = Kind::kString;
  std::string_view text;
  int64_t i = 0;
  uint64_t u = 0;
  double d = 0;
  bool b = false;
};

// Reads an encoded (or plain) payload; the views point into it.
class RecordReader {
 public:
  explicit RecordReader(std::string_view payload);

  std::string_view message() const { return message_; }
  // Fills `field` with the next field; false when there are no more.
  bool Next(FieldView& field);

 private:
  std::string_view message_;
  std::string_view rest_;  // undecoded fields; validated by the constructor
};

}  // namespace phalanx::log::internal
