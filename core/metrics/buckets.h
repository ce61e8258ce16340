// Histogram bucket layouts: validation and the usual generators.
//
// A layout is the list of finite upper bounds, strictly increasing; the "+Inf" bucket is
// implicit (always exposed, never listed). Pure and thread-safe.
#pragma once

#include <vector>

#include "core/base/result.h"

namespace phalanx::metrics {

// Prometheus client defaults, in seconds: .005 .01 .025 .05 .1 .25 .5 1 2.5 5 10.
std::vector<double> DefaultLatencyBuckets();

// start, start*factor, ..., count bounds. kInvalidArgument unless start > 0, factor > 1,
// count >= 1 and every bound is finite.
Result<std::vector<double>> ExponentialBuckets(double start, double factor, int count);

// start, start+width, ..., count bounds. kInvalidArgument unless width > 0, count >= 1.
Result<std::vector<double>> LinearBuckets(double start, double width, int count);

// Returns `bounds` with a trailing +Inf removed (it is implicit), or kInvalidArgument if
// a bound is NaN/-Inf/+Inf elsewhere or the bounds are not strictly increasing.
Result<std::vector<double>> NormalizeBuckets(std::vector<double> bounds);

}  // namespace phalanx::metrics
