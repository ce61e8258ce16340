#include "core/scheduling/release_forecast.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

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

// The exclusion found by the gang's end and GPUs answers as the lookup by key, wherever
// the gang lies among the gangs that end with it, in its pool and in every pool together.
TEST(ReleaseForecastTest, AnExcludedGangFoundByItsEndAnswersAsByKey) {
  const ReleaseForecast f = ThreeGangs();
  auto same = [](const ReleaseForecast::Shadow& x, const ReleaseForecast::Shadow& y) {
    return x.start == y.start && x.extra == y.extra && x.reachable == y.reachable;
  };
  const std::vector<std::tuple<std::string, std::string, double, int>> gangs = {
      {"a", "H100", 100, 8}, {"b", "H100", 300, 16}, {"c", "H100", 300, 8}, {"z", "A100", 50, 8}};
  for (const auto& [key, pool, end, gpus] : gangs) {
    const GangKey k(key);
    for (const std::string& view : {pool, std::string()}) {
      for (int need : {4, 10, 20, 28, 30, 40, 48}) {
        SCOPED_TRACE(fmt::format("pool '{}', without {}, need {}", view, key, need));
        EXPECT_TRUE(same(f.WhenWithout(f.PoolOf(view), need, 4, 10, end, gpus), f.When(view, need, 4, 10, &k)));
      }
    }
  }
  // b and c end together at t=300: without b, 4 + 8 + 8 = 20 at t=300.
  const auto s = f.WhenWithout(f.PoolOf("H100"), 20, 4, 10, 300, 16);
  EXPECT_DOUBLE_EQ(s.start, 300);
  EXPECT_EQ(s.extra, 0);
}

// The same on random forecasts: many gangs ending together, some overdue.
TEST(ReleaseForecastTest, AnExcludedGangFoundByItsEndAnswersAsByKeyOnRandomForecasts) {
  std::mt19937 rng(7);
  for (int round = 0; round < 40; ++round) {
    ReleaseForecast f;
    std::vector<std::tuple<GangKey, std::string, double, int>> gangs;
    const int n = 1 + static_cast<int>(rng() % 30);
    for (int i = 0; i < n; ++i) {
      GangKey key(fmt::format("g{}", rng() % 1000));
      const std::string pool = rng() % 3 == 0 ? "A100" : "H100";
      const double end = 50.0 * static_cast<double>(rng() % 6);  // 0..250: many equal, some before now
      const int gpus = 1 + static_cast<int>(rng() % 16);
      f.Add(key, pool, end, gpus);
      std::erase_if(gangs, [&](const auto& g) { return std::get<0>(g) == key; });
      gangs.emplace_back(key, pool, end, gpus);
    }
    for (const auto& [key, pool, end, gpus] : gangs) {
      for (const std::string& view : {pool, std::string()}) {
        for (int need = 1; need <= 120; need += 7) {
          for (int free_now : {0, 5}) {
            for (double now : {10.0, 120.0}) {
              const auto x = f.WhenWithout(f.PoolOf(view), need, free_now, now, end, gpus);
              const auto y = f.When(view, need, free_now, now, &key);
              SCOPED_TRACE(fmt::format("round {} pool '{}' without {} need {} free {} now {}", round, view, key.str(),
                                       need, free_now, now));
              EXPECT_EQ(x.reachable, y.reachable);
              EXPECT_EQ(x.start, y.start);
              EXPECT_EQ(x.extra, y.extra);
            }
          }
        }
      }
    }
  }
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

// The forecast keeps its per-pool order up to date on every Add and Remove (sorted
// arrays, prefix sums re-summed from the first change): answers after any interleaving of
// changes and queries must be those of the definition, and a copy's those of the original.
TEST(ReleaseForecastTest, IncrementalIndexAnswersAsAFreshOne) {
  std::mt19937 rng(17);
  ReleaseForecast f;
  std::map<std::string, std::tuple<std::string, double, int>> live;  // key -> (pool, end, gpus)
  const std::vector<std::string> pools = {"H100", "A100"};
  // The definition, by brute force: releases in (end, key) order; everything ending at the
  // instant that covers the need is released together.
  auto expect = [&](const std::string& pool, int need, int free_now, double now, const GangKey* without) {
    std::vector<std::tuple<double, std::string, int>> ends;
    for (const auto& [key, e] : live) {
      if ((pool.empty() || std::get<0>(e) == pool) && !(without && without->str() == key)) {
        ends.emplace_back(std::get<1>(e), key, std::get<2>(e));
      }
    }
    std::sort(ends.begin(), ends.end());
    if (free_now >= need) return ReleaseForecast::Shadow{now, free_now - need, true};
    int freed = free_now;
    for (size_t i = 0; i < ends.size(); ++i) {
      freed += std::get<2>(ends[i]);
      if (freed < need) continue;
      while (i + 1 < ends.size() && std::get<0>(ends[i + 1]) == std::get<0>(ends[i])) freed += std::get<2>(ends[++i]);
      const double end = std::get<0>(ends[i]);
      return ReleaseForecast::Shadow{end < now ? now + f.overdue_grace_s : end, freed - need, true};
    }
    return ReleaseForecast::Shadow{now, 0, false};
  };
  auto released_by = [&](const std::string& pool, double time, double now) {
    int sum = 0;
    for (const auto& [key, e] : live) {
      if (time < now || (!pool.empty() && std::get<0>(e) != pool) || std::get<1>(e) > time) continue;
      if (time < now + f.overdue_grace_s && std::get<1>(e) < now) continue;  // overdue: not before now + grace
      sum += std::get<2>(e);
    }
    return sum;
  };
  for (int step = 0; step < 400; ++step) {
    const std::string key = "g" + std::to_string(rng() % 60);
    if (rng() % 4 == 0) {
      f.Remove(GangKey(key));
      live.erase(key);
    } else {
      // Few distinct ends: many gangs end at the same instant (ties broken by key).
      const std::string& pool = pools[rng() % 2];
      const double end = 100.0 * static_cast<double>(rng() % 12);
      const int gpus = 1 + static_cast<int>(rng() % 16);
      f.Add(GangKey(key), pool, end, gpus);
      live[key] = {pool, end, gpus};
    }
    if (step % 3 != 0) continue;
    const ReleaseForecast copy = f;
    const GangKey without("g" + std::to_string(rng() % 60));
    for (const std::string pool : {"H100", "A100", ""}) {
      for (int need : {1, 9, 40, 120, 400}) {
        for (const GangKey* w : {static_cast<const GangKey*>(nullptr), &without}) {
          const auto a = f.When(pool, need, 3, 250, w), b = expect(pool, need, 3, 250, w), c = copy.When(pool, need, 3, 250, w);
          ASSERT_EQ(a.reachable, b.reachable) << step << " " << pool << " " << need;
          EXPECT_DOUBLE_EQ(a.start, b.start) << step << " " << pool << " " << need;
          EXPECT_EQ(a.extra, b.extra) << step << " " << pool << " " << need;
          EXPECT_EQ(c.reachable, a.reachable);
          EXPECT_DOUBLE_EQ(c.start, a.start);
          EXPECT_EQ(c.extra, a.extra);
        }
      }
      for (double t : {0.0, 250.0, 300.0, 400.0, 2000.0}) EXPECT_EQ(f.ReleasedBy(pool, t, 250), released_by(pool, t, 250)) << t;
    }
  }
}

}  // namespace
}  // namespace phalanx::scheduling
