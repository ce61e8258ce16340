#include "core/metrics/metric_names.h"

#include <string>

#include <fmt/format.h>

namespace phalanx::metrics {
namespace {

// Plain ASCII tests: std::isalpha depends on the C locale, names must not.
bool IsAsciiLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsAsciiDigit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

Status ValidateMetricName(std::string_view name) {
  if (name.empty()) return InvalidArgumentError("metric name must not be empty");
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = IsAsciiLetter(c) || c == '_' || c == ':' || (i > 0 && IsAsciiDigit(c));
    if (!ok) {
      return InvalidArgumentError(fmt::format(
          "invalid metric name \"{}\": must match [a-zA-Z_:][a-zA-Z0-9_:]*", name));
    }
  }
  return OkStatus();
}

Status ValidateLabelName(std::string_view name) {
  if (name.empty()) return InvalidArgumentError("label name must not be empty");
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = IsAsciiLetter(c) || c == '_' || (i > 0 && IsAsciiDigit(c));
    if (!ok) {
      return InvalidArgumentError(
          fmt::format("invalid label name \"{}\": must match [a-zA-Z_][a-zA-Z0-9_]*", name));
    }
  }
  if (name.starts_with("__")) {
    return InvalidArgumentError(fmt::format(
        "invalid label name \"{}\": names starting with \"__\" are reserved by Prometheus", name));
  }
  return OkStatus();
}

}  // namespace phalanx::metrics
