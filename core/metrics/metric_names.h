// Validation of Prometheus metric and label names (data model of the text format 0.0.4).
//
//   metric name: [a-zA-Z_:][a-zA-Z0-9_:]*
//   label name:  [a-zA-Z_][a-zA-Z0-9_]*, and not starting with "__" (reserved for
//                Prometheus' internal labels such as __name__).
// Label *values* may be any string; the exposition escapes them. Pure and thread-safe.
#pragma once

#include <string_view>

#include "core/base/status.h"

namespace phalanx::metrics {

// OK, or kInvalidArgument naming the offending name and the rule it breaks.
Status ValidateMetricName(std::string_view name);
Status ValidateLabelName(std::string_view name);

}  // namespace phalanx::metrics
