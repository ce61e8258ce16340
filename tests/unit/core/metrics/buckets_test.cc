#include "core/metrics/buckets.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

namespace phalanx::metrics {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(BucketsTest, DefaultLatencyBucketsMatchPrometheusDefaults) {
  EXPECT_EQ(DefaultLatencyBuckets(),
            (std::vector<double>{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}));
}

TEST(BucketsTest, ExponentialBucketsMultiplyByFactor) {
  auto b = ExponentialBuckets(0.001, 2, 4);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(*b, (std::vector<double>{0.001, 0.002, 0.004, 0.008}));
}

TEST(BucketsTest, ExponentialBucketsRejectBadArguments) {
  EXPECT_EQ(ExponentialBuckets(0, 2, 3).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ExponentialBuckets(1, 1, 3).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ExponentialBuckets(1, 2, 0).status().message(),
            "exponential buckets need start > 0, factor > 1, count >= 1; got start=1 "
            "factor=2 count=0");
  EXPECT_EQ(ExponentialBuckets(1e300, 1e10, 3).status().code(), StatusCode::kInvalidArgument);
}

TEST(BucketsTest, LinearBucketsAddWidth) {
  auto b = LinearBuckets(1, 0.5, 3);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(*b, (std::vector<double>{1, 1.5, 2}));
  EXPECT_EQ(LinearBuckets(1, 0, 3).status().code(), StatusCode::kInvalidArgument);
}

TEST(BucketsTest, NormalizeDropsTrailingInfinity) {
  auto b = NormalizeBuckets({1, 2, kInf});
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(*b, (std::vector<double>{1, 2}));
  auto empty = NormalizeBuckets({});
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(BucketsTest, NormalizeRejectsUnorderedAndNonFiniteBounds) {
  auto equal = NormalizeBuckets({1, 2, 2});
  EXPECT_EQ(equal.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(equal.status().message(),
            "histogram bucket bounds must be strictly increasing: bound 2 (2) <= bound 1 (2)");
  EXPECT_EQ(NormalizeBuckets({2, 1}).status().code(), StatusCode::kInvalidArgument);
  auto nan = NormalizeBuckets({1, std::nan(""), 3});
  EXPECT_EQ(nan.status().message(),
            "histogram bucket bound 1 is nan; only the last may be +Inf");
  EXPECT_EQ(NormalizeBuckets({-kInf, 1}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(NormalizeBuckets({kInf, 1}).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace phalanx::metrics
