#include "core/metrics/gauge.h"

#include <cmath>
#include <stdexcept>

#include <gtest/gtest.h>

namespace phalanx::metrics {
namespace {

TEST(GaugeTest, SetIncDecAddSub) {
  Gauge g;
  g.Set(10);
  g.Inc();
  g.Dec();
  g.Dec();
  g.Add(2.5);
  g.Sub(0.5);
  EXPECT_EQ(g.Value(), 11);
  g.Set(-3);
  EXPECT_EQ(g.Value(), -3);
}

TEST(GaugeTest, CallbackIsEvaluatedAtEveryRead) {
  Gauge g;
  g.Set(7);
  int depth = 3;
  g.SetCallback([&depth] { return static_cast<double>(depth); });
  EXPECT_EQ(g.Value(), 3);
  depth = 42;
  EXPECT_EQ(g.Value(), 42);
  g.ClearCallback();
  EXPECT_EQ(g.Value(), 7);
}

TEST(GaugeTest, ThrowingCallbackReadsAsNaN) {
  Gauge g;
  g.SetCallback([]() -> double { throw std::runtime_error("queue gone"); });
  EXPECT_TRUE(std::isnan(g.Value()));
}

TEST(GaugeTest, EmptyCallbackKeepsStoredValue) {
  Gauge g;
  g.Set(5);
  g.SetCallback(nullptr);
  EXPECT_EQ(g.Value(), 5);
}

}  // namespace
}  // namespace phalanx::metrics
