#include "core/metrics/metric_names.h"

#include <gtest/gtest.h>

namespace phalanx::metrics {
namespace {

TEST(MetricNamesTest, AcceptsPrometheusMetricNames) {
  for (const char* name : {"a", "_a", ":a", "phalanx_extender_requests_total", "job:rate5m",
                           "A9_:b"}) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(ValidateMetricName(name).ok());
  }
}

TEST(MetricNamesTest, RejectsMetricNamesOutsideTheCharset) {
  for (const char* name : {"9a", "a-b", "a b", "é", "a.b", "a{b}"}) {
    SCOPED_TRACE(name);
    Status s = ValidateMetricName(name);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(s.message(), std::string("invalid metric name \"") + name +
                               "\": must match [a-zA-Z_:][a-zA-Z0-9_:]*");
  }
  EXPECT_EQ(ValidateMetricName("").message(), "metric name must not be empty");
}

TEST(MetricNamesTest, AcceptsLabelNames) {
  for (const char* name : {"verb", "_x", "a9", "Result_2"}) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(ValidateLabelName(name).ok());
  }
}

TEST(MetricNamesTest, RejectsLabelNamesWithColonsDigitsFirstOrReservedPrefix) {
  for (const char* name : {"a:b", "1a", "a-b", ""}) {
    SCOPED_TRACE(name);
    EXPECT_EQ(ValidateLabelName(name).code(), StatusCode::kInvalidArgument);
  }
  Status reserved = ValidateLabelName("__name__");
  EXPECT_EQ(reserved.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(reserved.message(),
            "invalid label name \"__name__\": names starting with \"__\" are reserved by "
            "Prometheus");
}

}  // namespace
}  // namespace phalanx::metrics
