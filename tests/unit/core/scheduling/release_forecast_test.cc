#include "core/scheduling/release_forecast.h"

#include <gtest/gtest.h>

namespace phalanx::scheduling {
namespace {

ReleaseForecast ThreeGangs() {
  ReleaseForecast f;
  f.Add(GangKey("a"), "H100", 100, 8);
  f.Add(GangKey("b"), "H100", 300, 16);
  f.Add(GangKey("c"), "H100", 300, 8);
  f.Add(GangKey("z"), "A100", 50, 8);
  return f;
}

TEST(ReleaseForecastTest, ShadowIsTheFirstEndThatFreesEnough) {
  const ReleaseForecast f = ThreeGangs();
  // Enough already: now, with the surplus as extra.
  auto s = f.When("H100", 4, 6, 10);
  EXPECT_DOUBLE_EQ(s.start, 10);
  EXPECT_EQ(s.extra, 2);
  s = f.When("H100", 10, 4, 10);  // 4 free + 8 at t=100
  EXPECT_DOUBLE_EQ(s.start, 100);
  EXPECT_EQ(s.extra, 2);
  // Gangs ending at the same instant release together: 4 + 8 + 24 at t=300.
  s = f.When("H100", 20, 4, 10);
  EXPECT_DOUBLE_EQ(s.start, 300);
  EXPECT_EQ(s.extra, 16);
  s = f.When("H100", 100, 4, 10);
  EXPECT_FALSE(s.reachable);
  // Any pool: every pool's releases together (A100's at t=50 first).
  s = f.When("", 10, 4, 10);
  EXPECT_DOUBLE_EQ(s.start, 50);
  EXPECT_FALSE(f.When("L4", 10, 4, 10).reachable);
}

TEST(ReleaseForecastTest, AnExcludedGangReleasesNothing) {
  const ReleaseForecast f = ThreeGangs();
  const GangKey a("a"), b("b");
  auto s = f.When("H100", 10, 4, 10, &a);  // without a's 8 at t=100, the next is t=300
  EXPECT_DOUBLE_EQ(s.start, 300);
  EXPECT_EQ(s.extra, 4 + 24 - 10);
  s = f.When("H100", 10, 4, 10, &b);
  EXPECT_DOUBLE_EQ(s.start, 100);
  s = f.When("H100", 30, 4, 10, &b);  // 4 + 8 + 8 = 20 < 30 without b
  EXPECT_FALSE(s.reachable);
}

TEST(ReleaseForecastTest, OverdueGangsAreExpectedSoonNotInThePast) {
  ReleaseForecast f;
  f.Add(GangKey("late"), "H100", 100, 8);
  auto s = f.When("H100", 8, 0, 500);
  EXPECT_DOUBLE_EQ(s.start, 500 + f.overdue_grace_s);
  EXPECT_EQ(f.ReleasedBy("H100", 510, 500), 0);
  EXPECT_EQ(f.ReleasedBy("H100", 500 + f.overdue_grace_s, 500), 8);
}

TEST(ReleaseForecastTest, ReleasedByCountsEndsUpToTheTime) {
  ReleaseForecast f = ThreeGangs();
  EXPECT_EQ(f.ReleasedBy("H100", 99, 10), 0);
  EXPECT_EQ(f.ReleasedBy("H100", 100, 10), 8);
  EXPECT_EQ(f.ReleasedBy("H100", 1000, 10), 32);
  f.Remove(GangKey("b"));
  EXPECT_EQ(f.ReleasedBy("H100", 1000, 10), 16);
  f.Add(GangKey("a"), "H100", 2000, 8);  // re-adding moves it
  EXPECT_EQ(f.ReleasedBy("H100", 1000, 10), 8);
  EXPECT_TRUE(f.Contains(GangKey("a")));
}

}  // namespace
}  // namespace phalanx::scheduling
