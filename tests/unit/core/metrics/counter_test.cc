#include "core/metrics/counter.h"

#include <cmath>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace phalanx::metrics {
namespace {

TEST(CounterTest, IncAndAddAccumulate) {
  Counter c;
  EXPECT_EQ(c.Value(), 0);
  c.Inc();
  c.Add(2);
  c.Add(0.25);
  EXPECT_EQ(c.Value(), 3.25);
}

TEST(CounterTest, AddIgnoresNegativeAndNaNDeltas) {
  Counter c;
  c.Add(5);
  c.Add(-1);
  c.Add(std::nan(""));
  EXPECT_EQ(c.Value(), 5);
}

TEST(CounterTest, ConcurrentIncFromEightThreadsIsExact) {
  constexpr int kThreads = 8;
  constexpr int kPerThread = 100'000;
  Counter c;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&c] {
      for (int i = 0; i < kPerThread; ++i) c.Inc();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(c.Value(), static_cast<double>(kThreads) * kPerThread);
}

TEST(CounterTest, ConcurrentFractionalAddsAreNotLost) {
  constexpr int kThreads = 8;
  constexpr int kPerThread = 50'000;
  Counter c;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&c] {
      // 0.5 is exact in binary, so the CAS-loop sum must be exact too.
      for (int i = 0; i < kPerThread; ++i) c.Add(0.5);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(c.Value(), kThreads * kPerThread * 0.5);
}

}  // namespace
}  // namespace phalanx::metrics
