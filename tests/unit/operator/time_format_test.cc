#include "operator/api/time_format.h"

#include <gtest/gtest.h>

namespace phalanx::op {
namespace {

TEST(TimeFormatTest, RoundTripsWholeSeconds) {
  const SystemTime t = SystemTime(std::chrono::seconds(1795000000));
  EXPECT_EQ(FormatRfc3339(t), "2026-11-18T11:06:40Z");
  auto back = ParseRfc3339("2026-11-18T11:06:40Z");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, t);
}

TEST(TimeFormatTest, AcceptsFractionsAndOffsets) {
  auto a = ParseRfc3339("2026-11-18T12:06:40.500000+01:00");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(*a, SystemTime(std::chrono::seconds(1795000000)) + std::chrono::milliseconds(500));
}

TEST(TimeFormatTest, RejectsGarbage) {
  for (const char* bad : {"", "2026-11-18", "2026-11-18T09:46:40", "2026-13-18T09:46:40Z", "2026-11-18T09:46:40Zjunk"}) {
    SCOPED_TRACE(bad);
    EXPECT_EQ(ParseRfc3339(bad).status().code(), StatusCode::kInvalidArgument);
  }
}

// Found by fuzz/preempt_request: SystemTime holds int64 nanoseconds, so these overflowed (UB).
TEST(TimeFormatTest, RejectsYearsSystemTimeCannotHold) {
  for (const char* far : {"1013-01-02T03:04:05Z", "4052-01-02T03:04:05Z", "2262-12-31T23:59:59Z"}) {
    SCOPED_TRACE(far);
    EXPECT_EQ(ParseRfc3339(far).status().code(), StatusCode::kInvalidArgument);
  }
  EXPECT_TRUE(ParseRfc3339("1700-01-01T00:00:00Z").ok());
  EXPECT_TRUE(ParseRfc3339("2261-01-01T00:00:00Z").ok());
}

}  // namespace
}  // namespace phalanx::op
