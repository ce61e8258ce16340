#include "core/log/text_formatter.h"

#include <cmath>
#include <iterator>
#include <string_view>

#include <fmt/format.h>

#include "core/log/record_codec.h"

namespace phalanx::log {
namespace {

char LevelLetter(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace: return 'T';
    case spdlog::level::debug: return 'D';
    case spdlog::level::info: return 'I';
    case spdlog::level::warn: return 'W';
    case spdlog::level::err: return 'E';
    case spdlog::level::critical: return 'C';
    default: return '?';
  }
}

void Append(spdlog::memory_buf_t& out, std::string_view s) {
  out.append(s.data(), s.data() + s.size());
}

bool IsControl(unsigned char c) { return c < 0x20 || c == 0x7f; }

// Escapes control characters; with `quoted`, also `\` and `"`.
void AppendEscaped(spdlog::memory_buf_t& out, std::string_view s, bool quoted) {
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (ch) {
      case '\n': Append(out, "\\n"); continue;
      case '\r': Append(out, "\\r"); continue;
      case '\t': Append(out, "\\t"); continue;
      case '\\':
      case '"':
        if (quoted) out.push_back('\\');
        out.push_back(ch);
        continue;
      default: break;
    }
    if (IsControl(c)) {
      fmt::format_to(std::back_inserter(out), "\\x{:02x}", c);
    } else {
      out.push_back(ch);
    }
  }
}

bool NeedsQuotes(std::string_view s) {
  if (s.empty()) return true;
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (ch == ' ' || ch == '"' || ch == '=' || ch == '\\' || IsControl(c)) return true;
  }
  return false;
}

void AppendDouble(spdlog::memory_buf_t& out, double d) {
  if (std::isnan(d)) {
    Append(out, "NaN");
  } else if (std::isinf(d)) {
    Append(out, d > 0 ? "+Inf" : "-Inf");
  } else {
    fmt::format_to(std::back_inserter(out), "{}", d);
  }
}

void AppendValue(spdlog::memory_buf_t& out, const internal::FieldView& f) {
  using Kind = internal::FieldView::Kind;
  switch (f.kind) {
    case Kind::kString:
      if (NeedsQuotes(f.text)) {
        out.push_back('"');
        AppendEscaped(out, f.text, /*quoted=*/true);
        out.push_back('"');
      } else {
        Append(out, f.text);
      }
      return;
    case Kind::kInt: fmt::format_to(std::back_inserter(out), "{}", f.i); return;
    case Kind::kUint: fmt::format_to(std::back_inserter(out), "{}", f.u); return;
    case Kind::kDouble: AppendDouble(out, f.d); return;
    case Kind::kBool: Append(out, f.b ? "true" : "false"); return;
  }
}

}  // namespace

void TextFormatter::format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) {
  timestamp_.Append(msg.time, dest);
  dest.push_back(' ');
  dest.push_back(LevelLetter(msg.level));
  if (msg.logger_name.size() > 0) {
    dest.push_back(' ');
    dest.append(msg.logger_name.data(), msg.logger_name.data() + msg.logger_name.size());
  }
  Append(dest, "] ");
  internal::RecordReader record(std::string_view(msg.payload.data(), msg.payload.size()));
  AppendEscaped(dest, record.message(), /*quoted=*/false);
  internal::FieldView field;
  while (record.Next(field)) {
    dest.push_back(' ');
    AppendEscaped(dest, field.key, /*quoted=*/false);
    dest.push_back('=');
    AppendValue(dest, field);
  }
  dest.push_back('\n');
}

std::unique_ptr<spdlog::formatter> TextFormatter::clone() const {
  return std::make_unique<TextFormatter>();
}

}  // namespace phalanx::log
