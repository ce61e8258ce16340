#include "core/metrics/histogram.h"

#include <cmath>
#include <limits>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace phalanx::metrics {
namespace {

TEST(HistogramTest, CountsIntoCumulativeBucketsWithInclusiveUpperBounds) {
  const std::vector<double> bounds{1, 2, 5};
  Histogram h(bounds);
  for (double v : {0.5, 1.0, 1.5, 2.0, 4.0, 9.0}) h.Observe(v);
  Histogram::Snapshot s = h.Snap();
  // <=1: 0.5, 1.0 | <=2: +1.5, 2.0 | <=5: +4.0 | +Inf: +9.0
  EXPECT_EQ(s.cumulative, (std::vector<uint64_t>{2, 4, 5, 6}));
  EXPECT_EQ(s.count, 6u);
  EXPECT_EQ(s.sum, 18.0);
}

TEST(HistogramTest, NaNAndHugeValuesLandInInfBucket) {
  const std::vector<double> bounds{1};
  Histogram h(bounds);
  h.Observe(std::nan(""));
  h.Observe(std::numeric_limits<double>::infinity());
  h.Observe(-std::numeric_limits<double>::infinity());
  Histogram::Snapshot s = h.Snap();
  EXPECT_EQ(s.cumulative, (std::vector<uint64_t>{1, 3}));
  EXPECT_TRUE(std::isnan(s.sum));
}

TEST(HistogramTest, ManyBoundsUseTheSameInclusiveRule) {
  // > 16 bounds takes the binary-search path.
  std::vector<double> bounds;
  for (int i = 1; i <= 40; ++i) bounds.push_back(i);
  Histogram h(bounds);
  h.Observe(17);
  h.Observe(17.5);
  h.Observe(0);
  Histogram::Snapshot s = h.Snap();
  EXPECT_EQ(s.cumulative[0], 1u);   // le=1: 0
  EXPECT_EQ(s.cumulative[15], 1u);  // le=16
  EXPECT_EQ(s.cumulative[16], 2u);  // le=17: +17
  EXPECT_EQ(s.cumulative[17], 3u);  // le=18: +17.5
  EXPECT_EQ(s.count, 3u);
}

TEST(HistogramTest, NoBoundsHasOnlyTheInfBucket) {
  Histogram h(std::span<const double>{});
  h.Observe(3);
  Histogram::Snapshot s = h.Snap();
  EXPECT_EQ(s.cumulative, (std::vector<uint64_t>{1}));
  EXPECT_EQ(s.sum, 3);
}

TEST(HistogramTest, ConcurrentObservationsAreAllCounted) {
  const std::vector<double> bounds{0.5, 1.5};
  Histogram h(bounds);
  constexpr int kThreads = 8;
  constexpr int kPerThread = 50'000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&h, t] {
      for (int i = 0; i < kPerThread; ++i) h.Observe(static_cast<double>(t % 3));
    });
  }
  for (auto& t : threads) t.join();
  Histogram::Snapshot s = h.Snap();
  // Threads 0,3,6 observe 0; 1,4,7 observe 1; 2,5 observe 2.
  EXPECT_EQ(s.cumulative, (std::vector<uint64_t>{3 * kPerThread, 6 * kPerThread,
                                                 8 * kPerThread}));
  EXPECT_EQ(s.sum, (3.0 * 1 + 2.0 * 2) * kPerThread);
}

}  // namespace
}  // namespace phalanx::metrics
