#include "core/log/record_codec.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <type_traits>
#include <variant>

namespace phalanx::log::internal {
namespace {

constexpr std::string_view kMarker = "\x1fPHX";

void PutBytes(spdlog::memory_buf_t& out, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  out.append(p, p + n);
}

// Little-endian on every target we build for (x86-64, arm64); memcpy keeps it legal.
template <typename T>
void PutRaw(spdlog::memory_buf_t& out, T value) {
  static_assert(std::is_trivially_copyable_v<T>);
  PutBytes(out, &value, sizeof(value));
}

void PutString(spdlog::memory_buf_t& out, std::string_view s) {
  // 4 GiB per string is far beyond any sane log line; longer strings are cut.
  const uint32_t len = static_cast<uint32_t>(
      std::min<size_t>(s.size(), std::numeric_limits<uint32_t>::max()));
  PutRaw(out, len);
  PutBytes(out, s.data(), len);
}

// Consumes from the front of `in`; nullopt when it is too short.
template <typename T>
std::optional<T> TakeRaw(std::string_view& in) {
  if (in.size() < sizeof(T)) return std::nullopt;
  T value;
  std::memcpy(&value, in.data(), sizeof(T));
  in.remove_prefix(sizeof(T));
  return value;
}

std::optional<std::string_view> TakeString(std::string_view& in) {
  auto len = TakeRaw<uint32_t>(in);
  if (!len || in.size() < *len) return std::nullopt;
  std::string_view s = in.substr(0, *len);
  in.remove_prefix(*len);
  return s;
}

// Decodes one field from the front of `in`; false on malformed input.
bool TakeField(std::string_view& in, FieldView& field) {
  auto kind = TakeRaw<char>(in);
  if (!kind) return false;
  auto key = TakeString(in);
  if (!key) return false;
  field = FieldView{};
  field.key = *key;
  switch (*kind) {
    case 's': {
      auto text = TakeString(in);
      if (!text) return false;
      field.kind = FieldView::Kind::kString;
      field.text = *text;
      return true;
    }
    case 'i': {
      auto v = TakeRaw<int64_t>(in);
      if (!v) return false;
      field.kind = FieldView::Kind::kInt;
      field.i = *v;
      return true;
    }
    case 'u': {
      auto v = TakeRaw<uint64_t>(in);
      if (!v) return false;
      field.kind = FieldView::Kind::kUint;
      field.u = *v;
      return true;
    }
    case 'd': {
      auto v = TakeRaw<double>(in);
      if (!v) return false;
      field.kind = FieldView::Kind::kDouble;
      field.d = *v;
      return true;
    }
    case 'b': {
      auto v = TakeRaw<uint8_t>(in);
      if (!v) return false;
      field.kind = FieldView::Kind::kBool;
      field.b = *v != 0;
      return true;
    }
    default:
      return false;
  }
}

}  // namespace

void EncodeRecord(std::string_view message, std::span<const Field> fields,
                  spdlog::memory_buf_t& out) {
  PutBytes(out, kMarker.data(), kMarker.size());
  PutString(out, message);
  for (const Field& field : fields) {
    std::visit(
        [&](const auto& v) {
          using V = std::decay_t<decltype(v)>;
          char kind;
          if constexpr (std::is_same_v<V, std::string_view> || std::is_same_v<V, std::string>) {
            kind = 's';
          } else if constexpr (std::is_same_v<V, int64_t>) {
            kind = 'i';
          } else if constexpr (std::is_same_v<V, uint64_t>) {
            kind = 'u';
          } else if constexpr (std::is_same_v<V, double>) {
            kind = 'd';
          } else {
            kind = 'b';
          }
          PutRaw(out, kind);
          PutString(out, field.key());
          if constexpr (std::is_same_v<V, std::string_view> || std::is_same_v<V, std::string>) {
            PutString(out, v);
          } else if constexpr (std::is_same_v<V, bool>) {
            PutRaw(out, static_cast<uint8_t>(v ? 1 : 0));
          } else {
            PutRaw(out, v);
          }
        },
        field.value());
  }
}

RecordReader::RecordReader(std::string_view payload) : message_(payload) {
  if (!payload.starts_with(kMarker)) return;
  std::string_view in = payload.substr(kMarker.size());
  auto message = TakeString(in);
  if (!message) return;
  // Validate every field up front, so a malformed payload is shown whole as plain text
  // rather than half-decoded.
  std::string_view probe = in;
  FieldView field;
  while (!probe.empty()) {
    if (!TakeField(probe, field)) return;
  }
  message_ = *message;
  rest_ = in;
}

bool RecordReader::Next(FieldView& field) {
  if (rest_.empty()) return false;
  return TakeField(rest_, field);
}

}  // namespace phalanx::log::internal
