#include "core/metrics/exposition.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace phalanx::metrics {
namespace {

TEST(ExpositionTest, FormatsValuesWithoutExponentNoiseForIntegers) {
  struct Case {
    double value;
    const char* want;
  };
  const Case cases[] = {
      {3, "3"},
      {0, "0"},
      {-2, "-2"},
      {0.25, "0.25"},
      {0.1, "0.1"},
      {1e6, "1000000"},
      {1e16, "10000000000000000"},
      {1e-7, "1e-07"},
      {1e20, "1e+20"},
      {std::numeric_limits<double>::infinity(), "+Inf"},
      {-std::numeric_limits<double>::infinity(), "-Inf"},
      {std::nan(""), "NaN"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.want);
    EXPECT_EQ(FormatValue(c.value), c.want);
  }
}

TEST(ExpositionTest, HelpEscapesBackslashAndNewlineOnly) {
  std::string out;
  AppendHeader(out, "m", "Path C:\\tmp\nsecond \"line\"", "gauge");
  EXPECT_EQ(out,
            "# HELP m Path C:\\\\tmp\\nsecond \"line\"\n"
            "# TYPE m gauge\n");
}

TEST(ExpositionTest, LabelValuesEscapeBackslashQuoteAndNewline) {
  std::string out;
  const std::vector<std::string> names{"a", "b"};
  const std::vector<std::string> values{"x\\y\"z\n", "plain"};
  AppendSeries(out, "m", "_sum", names, values);
  EXPECT_EQ(out, "m_sum{a=\"x\\\\y\\\"z\\n\",b=\"plain\"} ");
}

TEST(ExpositionTest, SeriesWithoutLabelsHasNoBraces) {
  std::string out;
  AppendSeries(out, "m", "", {}, {});
  EXPECT_EQ(out, "m ");
  out.clear();
  AppendSeries(out, "m", "_bucket", {}, {}, "+Inf");
  EXPECT_EQ(out, "m_bucket{le=\"+Inf\"} ");
}

}  // namespace
}  // namespace phalanx::metrics
