// Histogram: counts observations into buckets (Prometheus "histogram").
//
// Each observation lands in exactly one internal bucket (the first bound >= value, or the
// implicit +Inf bucket; NaN goes to +Inf like client_golang). Exposition turns the
// per-bucket counts into the cumulative `_bucket{le=...}` series, and reports `_count` as
// the +Inf bucket so `_count == _bucket{le="+Inf"}` holds in every scrape even while
// writers run; `_sum` may lag or lead by the observations in flight (consistent enough
// for rate()).
// Thread-safe and lock-free: Observe() is one relaxed fetch_add on a bucket plus a CAS
// loop on the sum. Owned by its Family; `upper_bounds` (validated by NormalizeBuckets)
// is owned by the Family too and outlives the Histogram.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace phalanx::metrics {

class Histogram {
 public:
  explicit Histogram(std::span<const double> upper_bounds);
  Histogram(const Histogram&) = delete;
  Histogram& operator=(const Histogram&) = delete;

  void Observe(double value);

  struct Snapshot {
    // cumulative[i] = observations <= upper_bounds[i]; the last entry is the +Inf bucket.
    std::vector<uint64_t> cumulative;
    double sum = 0;
    uint64_t count = 0;  // == cumulative.back()
  };
  Snapshot Snap() const;

  std::span<const double> upper_bounds() const { return upper_bounds_; }

 private:
  size_t BucketIndex(double value) const;

  std::span<const double> upper_bounds_;
  // upper_bounds_.size() + 1 cells, non-cumulative; the last is +Inf.
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;
  std::atomic<double> sum_{0.0};
};

}  // namespace phalanx::metrics
