#include "core/metrics/histogram.h"

#include <algorithm>
#include <cmath>

namespace phalanx::metrics {

Histogram::Histogram(std::span<const double> upper_bounds)
    : upper_bounds_(upper_bounds),
      counts_(std::make_unique<std::atomic<uint64_t>[]>(upper_bounds.size() + 1)) {}

size_t Histogram::BucketIndex(double value) const {
  if (std::isnan(value)) return upper_bounds_.size();
  // Typical layouts have ~10-20 bounds: a linear scan beats binary search's branch misses.
  if (upper_bounds_.size() <= 16) {
    size_t i = 0;
    while (i < upper_bounds_.size() && upper_bounds_[i] < value) ++i;
    return i;
  }
  return static_cast<size_t>(std::lower_bound(upper_bounds_.begin(), upper_bounds_.end(), value) -
                             upper_bounds_.begin());
}

void Histogram::Observe(double value) {
  counts_[BucketIndex(value)].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(value, std::memory_order_relaxed);
}

Histogram::Snapshot Histogram::Snap() const {
  Snapshot snap;
  snap.cumulative.resize(upper_bounds_.size() + 1);
  uint64_t running = 0;
  for (size_t i = 0; i < snap.cumulative.size(); ++i) {
    running += counts_[i].load(std::memory_order_relaxed);
    snap.cumulative[i] = running;
  }
  snap.count = running;
  snap.sum = sum_.load(std::memory_order_relaxed);
  return snap;
}

}  // namespace phalanx::metrics
