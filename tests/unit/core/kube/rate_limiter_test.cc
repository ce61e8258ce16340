#include "core/kube/rate_limiter.h"

#include <gtest/gtest.h>

#include "tests/fakes/clock/fake_clock.h"

namespace phalanx::kube {
namespace {

using std::chrono::milliseconds;

TEST(TokenBucketTest, BurstThenQps) {
  phalanx::testing::FakeClock clock;
  TokenBucket bucket(10, 3, clock);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(bucket.Reserve(), Duration::zero()) << i;
  // In debt: the 4th waits 100 ms, the 5th 200 ms (reservations queue).
  EXPECT_EQ(std::chrono::duration_cast<milliseconds>(bucket.Reserve()).count(), 100);
  EXPECT_EQ(std::chrono::duration_cast<milliseconds>(bucket.Reserve()).count(), 200);
  clock.Advance(milliseconds(1000));  // refills 10, capped at burst: 3 - 2 owed = 1 usable... capped
  EXPECT_EQ(bucket.Reserve(), Duration::zero());
}

TEST(TokenBucketTest, RefillIsCappedAtBurst) {
  phalanx::testing::FakeClock clock;
  TokenBucket bucket(100, 2, clock);
  clock.Advance(std::chrono::hours(1));
  EXPECT_EQ(bucket.Reserve(), Duration::zero());
  EXPECT_EQ(bucket.Reserve(), Duration::zero());
  EXPECT_GT(bucket.Reserve(), Duration::zero());
}

TEST(TokenBucketTest, ZeroQpsIsUnlimited) {
  phalanx::testing::FakeClock clock;
  TokenBucket bucket(0, 1, clock);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(bucket.Reserve(), Duration::zero());
}

}  // namespace
}  // namespace phalanx::kube
