// Prometheus text exposition format 0.0.4: the pieces every family writes.
//
//   # HELP <name> <help, with \ and newline escaped>
//   # TYPE <name> counter|gauge|histogram
//   <name>{<label>="<value, with \ " and newline escaped>",...} <value>
//
// Values are written so integers carry no exponent noise ("3", "1000000"), other finite
// values use the shortest representation that round-trips ("0.25", "1e-07"), and the
// specials are "+Inf", "-Inf" and "NaN". Pure and thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace phalanx::metrics {

// Content-Type of a /metrics response.
inline constexpr std::string_view kTextContentType = "text/plain; version=0.0.4; charset=utf-8";

void AppendValue(std::string& out, double value);
void AppendValue(std::string& out, uint64_t value);
std::string FormatValue(double value);

// Escapes `\` and newline (HELP text).
void AppendEscapedHelp(std::string& out, std::string_view help);
// Escapes `\`, `"` and newline (label values).
void AppendEscapedLabelValue(std::string& out, std::string_view value);

// "# HELP name help\n# TYPE name type\n".
void AppendHeader(std::string& out, std::string_view name, std::string_view help,
                  std::string_view type);

// Appends `<name><suffix>{n1="v1",...[,le="<le>"]} ` (with the trailing space, without the
// value): names and values are parallel; `le` is added last when non-empty; no braces
// when there are no labels at all.
void AppendSeries(std::string& out, std::string_view name, std::string_view suffix,
                  std::span<const std::string> label_names,
                  std::span<const std::string> label_values, std::string_view le = {});

}  // namespace phalanx::metrics
