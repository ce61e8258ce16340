#include "core/log/json_formatter.h"

#include <cmath>
#include <iterator>

#include <fmt/format.h>

#include "core/log/record_codec.h"

namespace phalanx::log {
namespace {

std::string_view LevelName(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace: return "trace";
    case spdlog::level::debug: return "debug";
    case spdlog::level::info: return "info";
    case spdlog::level::warn: return "warn";
    case spdlog::level::err: return "error";
    case spdlog::level::critical: return "critical";
    default: return "unknown";
  }
}

void Append(spdlog::memory_buf_t& out, std::string_view s) {
  out.append(s.data(), s.data() + s.size());
}

// Length of the well-formed UTF-8 sequence at the front of `s` (RFC 3629: no overlongs,
// no surrogates, <= U+10FFFF), or 0 if it is not one.
size_t Utf8SequenceLength(std::string_view s) {
  const auto b0 = static_cast<unsigned char>(s[0]);
  auto cont = [&](size_t i) {
    return i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80;
  };
  if (b0 >= 0xC2 && b0 <= 0xDF) return cont(1) ? 2 : 0;
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    const auto b1 = static_cast<unsigned char>(s[1]);
    if (b0 == 0xE0 && b1 < 0xA0) return 0;   // overlong
    if (b0 == 0xED && b1 >= 0xA0) return 0;  // surrogate
    return 3;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    const auto b1 = static_cast<unsigned char>(s[1]);
    if (b0 == 0xF0 && b1 < 0x90) return 0;   // overlong
    if (b0 == 0xF4 && b1 >= 0x90) return 0;  // > U+10FFFF
    return 4;
  }
  return 0;
}

void AppendNumber(spdlog::memory_buf_t& out, double d) {
  if (std::isnan(d)) {
    Append(out, "\"NaN\"");
  } else if (std::isinf(d)) {
    Append(out, d > 0 ? "\"+Inf\"" : "\"-Inf\"");
  } else {
    // fmt's shortest form ("3", "0.25", "1e-07", "1e+20") is valid JSON number syntax.
    fmt::format_to(std::back_inserter(out), "{}", d);
  }
}

void AppendField(spdlog::memory_buf_t& out, const internal::FieldView& f) {
  using Kind = internal::FieldView::Kind;
  out.push_back(',');
  internal::AppendJsonString(out, f.key);
  out.push_back(':');
  switch (f.kind) {
    case Kind::kString: internal::AppendJsonString(out, f.text); return;
    case Kind::kInt: fmt::format_to(std::back_inserter(out), "{}", f.i); return;
    case Kind::kUint: fmt::format_to(std::back_inserter(out), "{}", f.u); return;
    case Kind::kDouble: AppendNumber(out, f.d); return;
    case Kind::kBool: Append(out, f.b ? "true" : "false"); return;
  }
}

}  // namespace

namespace internal {

void AppendJsonString(spdlog::memory_buf_t& out, std::string_view s) {
  out.push_back('"');
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '"': Append(out, "\\\""); break;
        case '\\': Append(out, "\\\\"); break;
        case '\n': Append(out, "\\n"); break;
        case '\r': Append(out, "\\r"); break;
        case '\t': Append(out, "\\t"); break;
        case '\b': Append(out, "\\b"); break;
        case '\f': Append(out, "\\f"); break;
        default:
          if (c < 0x20) {
            fmt::format_to(std::back_inserter(out), "\\u{:04x}", c);
          } else {
            out.push_back(static_cast<char>(c));
          }
      }
      ++i;
      continue;
    }
    const size_t n = Utf8SequenceLength(s.substr(i));
    if (n == 0) {
      Append(out, "\\ufffd");
      ++i;
    } else {
      out.append(s.data() + i, s.data() + i + n);
      i += n;
    }
  }
  out.push_back('"');
}

}  // namespace internal

void JsonFormatter::format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) {
  Append(dest, "{\"ts\":\"");
  timestamp_.Append(msg.time, dest);
  Append(dest, "\",\"level\":\"");
  Append(dest, LevelName(msg.level));
  dest.push_back('"');
  if (msg.logger_name.size() > 0) {
    Append(dest, ",\"logger\":");
    internal::AppendJsonString(dest,
                               std::string_view(msg.logger_name.data(), msg.logger_name.size()));
  }
  internal::RecordReader record(std::string_view(msg.payload.data(), msg.payload.size()));
  Append(dest, ",\"msg\":");
  internal::AppendJsonString(dest, record.message());
  internal::FieldView field;
  while (record.Next(field)) AppendField(dest, field);
  Append(dest, "}\n");
}

std::unique_ptr<spdlog::formatter> JsonFormatter::clone() const {
  return std::make_unique<JsonFormatter>();
}

}  // namespace phalanx::log
