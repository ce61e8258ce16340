// A running gang that outlives its duration hint (issue 25): the engine re-forecasts it
// instead of expecting it to end "now" pass after pass, and counts the overrun.
#include <gtest/gtest.h>

#include "core/scheduling/engine.h"
#include "tests/unit/core/scheduling/fake_driver.h"

namespace phalanx::scheduling {
namespace {

using testing::FakeDriver;
using testing::Gang;
using testing::kStandard;

EnginePolicy EveryTierReserves() {
  EnginePolicy p = EnginePolicy::Defaults();
  for (TierPolicy& t : p.tiers) t.reserve_after_s = 0;
  EXPECT_TRUE(p.Validate().ok());
  return p;
}

TEST(EngineOverrunTest, AGangPastItsHintIsExpectedToRunAsLongAgain) {
  FakeDriver driver;
  testing::AddRack(driver.mutable_state(), "n", 2, "r0");
  Engine engine(EveryTierReserves());
  ASSERT_TRUE(engine.Enqueue(Gang("x", 1, 8, kStandard, 0, 1000)).ok());
  engine.Pass(0, driver);
  ASSERT_TRUE(engine.IsRunning(GangKey("x")));
  ASSERT_TRUE(engine.Enqueue(Gang("head", 2, 8, kStandard, 1, 500)).ok());
  engine.Pass(1, driver);
  ASSERT_EQ(engine.Heads().size(), 1u);
  EXPECT_DOUBLE_EQ(engine.Heads()[0].expected_start, 1000);
  EXPECT_EQ(engine.stats().overruns, 0u);
  // x said 1000 s and still runs at 1500: expected to need another 1000 s, not 60.
  engine.Pass(1500, driver);
  ASSERT_EQ(engine.Heads().size(), 1u);
  EXPECT_DOUBLE_EQ(engine.Heads()[0].expected_start, 2500);
  EXPECT_EQ(engine.stats().overruns, 1u);
  // Counted once per overrun, not once per pass.
  engine.Pass(1600, driver);
  EXPECT_EQ(engine.stats().overruns, 1u);
  EXPECT_DOUBLE_EQ(engine.Heads()[0].expected_start, 2500);
  // Work that ends before the re-forecast start backfills behind the head (with the old
  // "overdue ends within a minute" it could not).
  ASSERT_TRUE(engine.Enqueue(Gang("short", 1, 8, kStandard, 1700, 600)).ok());
  engine.Pass(1700, driver);
  EXPECT_TRUE(engine.IsRunning(GangKey("short")));
  const Admission* a = driver.AdmissionOf("short");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->kind, AdmitKind::kBackfillEndsInTime);
}

}  // namespace
}  // namespace phalanx::scheduling
