#include "core/metrics/exposition.h"

#include <cmath>
#include <cstdint>

#include <fmt/format.h>

namespace phalanx::metrics {

void AppendValue(std::string& out, double value) {
  if (std::isnan(value)) {
    out += "NaN";
  } else if (std::isinf(value)) {
    out += value > 0 ? "+Inf" : "-Inf";
  } else if (std::floor(value) == value && std::fabs(value) < 9.2e18) {
    // Whole numbers within int64 print as integers: fmt's shortest form would switch to
    // "1e+16" from 10^16 on, which reads as noise on a counter.
    const fmt::format_int digits(static_cast<int64_t>(value));
    out.append(digits.data(), digits.size());
  } else {
    // Shortest round-trip form is at most 24 chars ("-2.2250738585072014e-308").
    char buf[32];
    const auto result = fmt::format_to_n(buf, sizeof(buf), "{}", value);
    out.append(buf, result.out);
  }
}

void AppendValue(std::string& out, uint64_t value) {
  const fmt::format_int digits(value);
  out.append(digits.data(), digits.size());
}

std::string FormatValue(double value) {
  std::string out;
  AppendValue(out, value);
  return out;
}

void AppendEscapedHelp(std::string& out, std::string_view help) {
  for (char c : help) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      default: out += c;
    }
  }
}

void AppendEscapedLabelValue(std::string& out, std::string_view value) {
  for (char c : value) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      default: out += c;
    }
  }
}

void AppendHeader(std::string& out, std::string_view name, std::string_view help,
                  std::string_view type) {
  out += "# HELP ";
  out += name;
  out += ' ';
  AppendEscapedHelp(out, help);
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

void AppendSeries(std::string& out, std::string_view name, std::string_view suffix,
                  std::span<const std::string> label_names,
                  std::span<const std::string> label_values, std::string_view le) {
  out += name;
  out += suffix;
  if (!label_names.empty() || !le.empty()) {
    out += '{';
    bool first = true;
    for (size_t i = 0; i < label_names.size() && i < label_values.size(); ++i) {
      if (!first) out += ',';
      first = false;
      out += label_names[i];
      out += "=\"";
      AppendEscapedLabelValue(out, label_values[i]);
      out += '"';
    }
    if (!le.empty()) {
      if (!first) out += ',';
      out += "le=\"";
      out += le;
      out += '"';
    }
    out += '}';
  }
  out += ' ';
}

}  // namespace phalanx::metrics
