// Tier names <-> priorities: the PriorityClasses the chart installs (docs/architecture.md §2.1).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace phalanx::sim {

inline constexpr int kCriticalPriority = 1000000;
inline constexpr int kHighPriority = 10000;
inline constexpr int kStandardPriority = 1000;
inline constexpr int kSpotPriority = 100;

// "critical" | "high" | "standard" | "spot" (also with the "phalanx-" prefix) -> priority.
std::optional<int> TierPriority(std::string_view tier);
// Canonical name of a priority: the tier it equals, else "p<priority>".
std::string TierName(int priority);

}  // namespace phalanx::sim
