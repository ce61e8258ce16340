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

}  // namespace
}  // namespace phalanx::op
