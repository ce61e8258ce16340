#include "core/scheduling/duration_calibration.h"

#include <algorithm>
#include <cmath>

namespace phalanx::scheduling {

void DurationCalibration::Observe(size_t tier, bool hinted, double expected_s, double ran_s) {
  if (!(expected_s > 0) || !(ran_s > 0) || !std::isfinite(expected_s) || !std::isfinite(ran_s)) return;
  const size_t i = 2 * tier + (hinted ? 1 : 0);
  if (windows_.size() <= i) windows_.resize(i + 1);
  Window& w = windows_[i];
  w.samples.emplace_back(expected_s, ran_s);
  w.expected += expected_s;
  w.ran += ran_s;
  if (w.samples.size() > kWindow) {
    w.expected -= w.samples.front().first;
    w.ran -= w.samples.front().second;
    w.samples.pop_front();
  }
  // Re-sum once per window: a long run of adds and subtracts drifts.
  if (++w.since_resum >= kWindow) {
    w.since_resum = 0;
    w.expected = 0;
    w.ran = 0;
    for (const auto& [e, r] : w.samples) {
      w.expected += e;
      w.ran += r;
    }
  }
}

const DurationCalibration::Window* DurationCalibration::Find(size_t tier, bool hinted) const {
  const size_t i = 2 * tier + (hinted ? 1 : 0);
  return i < windows_.size() ? &windows_[i] : nullptr;
}

double DurationCalibration::Ratio(size_t tier, bool hinted) const {
  const Window* w = Find(tier, hinted);
  if (w == nullptr || w->samples.size() < kMinSamples || !(w->expected > 0)) return 1;
  const double ratio = w->ran / w->expected;
  if (std::abs(ratio - 1) <= kDeadBand) return 1;
  return std::clamp(ratio, kMinRatio, kMaxRatio);
}

size_t DurationCalibration::Samples(size_t tier, bool hinted) const {
  const Window* w = Find(tier, hinted);
  return w == nullptr ? 0 : w->samples.size();
}

}  // namespace phalanx::scheduling
