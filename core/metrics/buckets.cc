#include "core/metrics/buckets.h"

#include <cmath>
#include <limits>
#include <utility>

#include <fmt/format.h>

namespace phalanx::metrics {

std::vector<double> DefaultLatencyBuckets() {
  return {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}

Result<std::vector<double>> ExponentialBuckets(double start, double factor, int count) {
  if (!(start > 0) || !(factor > 1) || count < 1) {
    return InvalidArgumentError(fmt::format(
        "exponential buckets need start > 0, factor > 1, count >= 1; got start={} factor={} "
        "count={}",
        start, factor, count));
  }
  std::vector<double> bounds;
  bounds.reserve(static_cast<size_t>(count));
  double bound = start;
  for (int i = 0; i < count; ++i) {
    if (!std::isfinite(bound)) {
      return InvalidArgumentError(
          fmt::format("exponential buckets overflow: bound {} of {} is not finite", i, count));
    }
    bounds.push_back(bound);
    bound *= factor;
  }
  return bounds;
}

Result<std::vector<double>> LinearBuckets(double start, double width, int count) {
  if (!std::isfinite(start) || !(width > 0) || !std::isfinite(width) || count < 1) {
    return InvalidArgumentError(fmt::format(
        "linear buckets need a finite start, width > 0, count >= 1; got start={} width={} "
        "count={}",
        start, width, count));
  }
  std::vector<double> bounds;
  bounds.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) bounds.push_back(start + width * i);
  return bounds;
}

Result<std::vector<double>> NormalizeBuckets(std::vector<double> bounds) {
  if (!bounds.empty() && bounds.back() == std::numeric_limits<double>::infinity()) {
    bounds.pop_back();
  }
  for (size_t i = 0; i < bounds.size(); ++i) {
    if (!std::isfinite(bounds[i])) {
      return InvalidArgumentError(
          fmt::format("histogram bucket bound {} is {}; only the last may be +Inf", i, bounds[i]));
    }
    if (i > 0 && !(bounds[i - 1] < bounds[i])) {
      return InvalidArgumentError(
          fmt::format("histogram bucket bounds must be strictly increasing: bound {} ({}) <= "
                      "bound {} ({})",
                      i, bounds[i], i - 1, bounds[i - 1]));
    }
  }
  return bounds;
}

}  // namespace phalanx::metrics
