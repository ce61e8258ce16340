// RFC 3339 timestamps as the Kubernetes API writes them ("2026-11-22T09:04:05Z").
// Status times have second precision (metav1.Time); parsing accepts fractional seconds
// and numeric offsets so MicroTime fields and hand-written objects decode too.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/base/clock.h"
#include "core/base/result.h"

namespace phalanx::op {

// "YYYY-MM-DDTHH:MM:SSZ", truncated to the second.
std::string FormatRfc3339(SystemTime time);
// kInvalidArgument with the offending text when `text` is not RFC 3339.
// Times beyond the range of SystemTime (years 1678-2261, int64 nanoseconds) are InvalidArgument.
Result<SystemTime> ParseRfc3339(std::string_view text);
inline constexpr int64_t kMaxRfc3339Seconds = 9'200'000'000;  // |seconds since 1970| SystemTime holds
// Truncates to whole seconds, so a time survives an encode/decode round trip unchanged.
SystemTime TruncateToSeconds(SystemTime time);
// (b - a) in seconds as a double; negative when b is before a.
double SecondsBetween(SystemTime a, SystemTime b);

}  // namespace phalanx::op
