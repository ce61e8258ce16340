#include "sim/model/tiers.h"

#include <algorithm>

#include <fmt/format.h>

#include "sim/model/job.h"

namespace phalanx::sim {

std::optional<int> TierPriority(std::string_view tier) {
  if (tier.starts_with("phalanx-")) tier.remove_prefix(8);
  if (tier == "critical") return kCriticalPriority;
  if (tier == "high") return kHighPriority;
  if (tier == "standard") return kStandardPriority;
  if (tier == "spot") return kSpotPriority;
  return std::nullopt;
}

std::string TierName(int priority) {
  switch (priority) {
    case kCriticalPriority: return "critical";
    case kHighPriority: return "high";
    case kStandardPriority: return "standard";
    case kSpotPriority: return "spot";
    default: return fmt::format("p{}", priority);
  }
}

void FinalizeWorkload(Workload& w) {
  std::stable_sort(w.jobs.begin(), w.jobs.end(), [](const Job& a, const Job& b) {
    return a.submit != b.submit ? a.submit < b.submit : a.line < b.line;
  });
  for (size_t i = 0; i < w.jobs.size(); ++i) w.jobs[i].id = static_cast<JobId>(i);
}

void ScaleSubmitGaps(Workload& w, double scale) {
  if (!(scale > 0) || scale == 1 || w.jobs.empty()) return;
  const double t0 = w.jobs.front().submit;  // sorted: the first submit
  for (Job& j : w.jobs) j.submit = t0 + (j.submit - t0) / scale;
  w.notes.push_back(fmt::format("{}: submit gaps divided by {:g}", w.format, scale));
}

}  // namespace phalanx::sim
