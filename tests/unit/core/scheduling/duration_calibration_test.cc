// Expected run times learned from how long gangs really held their GPUs (issue 25, noisy
// hints): the calibration itself, and the engine's forecasts, wait estimates and what it
// learns from (ends by themselves, not its own evictions).
#include "core/scheduling/duration_calibration.h"

#include <string>

#include <gtest/gtest.h>

#include "core/scheduling/engine.h"
#include "tests/unit/core/scheduling/fake_driver.h"

namespace phalanx::scheduling {
namespace {

using testing::FakeDriver;
using testing::Gang;
using testing::kHigh;
using testing::kSpot;
using testing::kStandard;

constexpr size_t kN = DurationCalibration::kMinSamples;

TEST(DurationCalibrationTest, LearnsPerTierAndKindOnceEnoughGangsEnded) {
  DurationCalibration c;
  EXPECT_DOUBLE_EQ(c.Ratio(0, true), 1);
  for (size_t i = 0; i + 1 < kN; ++i) c.Observe(2, true, 1000, 500);
  EXPECT_DOUBLE_EQ(c.Ratio(2, true), 1) << "not before kMinSamples ends";
  c.Observe(2, true, 1000, 500);
  EXPECT_EQ(c.Samples(2, true), kN);
  EXPECT_DOUBLE_EQ(c.Ratio(2, true), 0.5);
  EXPECT_DOUBLE_EQ(c.Ratio(2, false), 1) << "unhinted gangs learn apart from hinted ones";
  EXPECT_DOUBLE_EQ(c.Ratio(1, true), 1) << "and each tier apart";
}

TEST(DurationCalibrationTest, ExactHintsStayExact) {
  DurationCalibration c;
  for (size_t i = 0; i < kN; ++i) c.Observe(0, true, 1000, i % 2 == 0 ? 1015 : 990);
  EXPECT_DOUBLE_EQ(c.Ratio(0, true), 1);
}

TEST(DurationCalibrationTest, LongGangsWeighMoreThanShortOnes) {
  DurationCalibration c;
  // 31 one-minute jobs that ran 10x their hint and one long job that ran half of it.
  for (size_t i = 0; i + 1 < kN; ++i) c.Observe(0, true, 60, 600);
  c.Observe(0, true, 100000, 50000);
  const double ratio = c.Ratio(0, true);
  EXPECT_NEAR(ratio, (31 * 600.0 + 50000) / (31 * 60.0 + 100000), 1e-9);
  EXPECT_LT(ratio, 1);
}

TEST(DurationCalibrationTest, ForgetsEndsOlderThanTheWindowAndIsBounded) {
  DurationCalibration c;
  for (size_t i = 0; i < DurationCalibration::kWindow; ++i) c.Observe(0, true, 1000, 300);
  EXPECT_DOUBLE_EQ(c.Ratio(0, true), 0.3);
  for (size_t i = 0; i < DurationCalibration::kWindow; ++i) c.Observe(0, true, 1000, 1000);
  EXPECT_DOUBLE_EQ(c.Ratio(0, true), 1) << "the users who overestimated are gone from the window";
  EXPECT_EQ(c.Samples(0, true), DurationCalibration::kWindow);
  for (size_t i = 0; i < DurationCalibration::kWindow; ++i) c.Observe(1, false, 10000, 1);
  EXPECT_DOUBLE_EQ(c.Ratio(1, false), DurationCalibration::kMinRatio);
  for (size_t i = 0; i < DurationCalibration::kWindow; ++i) c.Observe(1, true, 1, 10000);
  EXPECT_DOUBLE_EQ(c.Ratio(1, true), DurationCalibration::kMaxRatio);
}

TEST(DurationCalibrationTest, IgnoresWhatIsNoRunTime) {
  DurationCalibration c;
  for (size_t i = 0; i < kN; ++i) {
    c.Observe(0, true, 1000, 0);
    c.Observe(0, true, 0, 1000);
    c.Observe(0, true, 1000, -5);
  }
  EXPECT_EQ(c.Samples(0, true), 0u);
  EXPECT_DOUBLE_EQ(c.Ratio(0, true), 1);
}

// kN one-GPU standard gangs, each hinting `hint` s and ending after `ran` s, on a 2-node pool.
double TeachStandard(Engine& engine, FakeDriver& driver, double hint, double ran, double t) {
  for (size_t i = 0; i < kN; i += 16) {
    std::vector<GangKey> batch;
    for (size_t j = i; j < i + 16 && j < kN; ++j) {
      const std::string key = "done-" + std::to_string(j);
      EXPECT_TRUE(engine.Enqueue(Gang(key, 1, 1, kStandard, t, hint)).ok());
      batch.emplace_back(key);
    }
    engine.Pass(t, driver);
    t += ran;
    for (const GangKey& k : batch) {
      EXPECT_TRUE(engine.IsRunning(k));
      driver.Release(k);
      engine.OnEnded(k, t);
    }
  }
  return t;
}

EnginePolicy EveryTierReserves(bool calibrate) {
  EnginePolicy p = EnginePolicy::Defaults();
  for (TierPolicy& t : p.tiers) t.reserve_after_s = 0;
  p.calibrate_durations = calibrate;
  EXPECT_TRUE(p.Validate().ok());
  return p;
}

// Users who hint twice their run times: once the tier showed it, a head behind a running
// gang expects its GPUs when the gang really tends to end, and only work that ends by then
// backfills.
TEST(EngineCalibrationTest, AHeadExpectsItsStartFromWhatTheTierReallyRan) {
  for (bool calibrate : {false, true}) {
    SCOPED_TRACE(calibrate ? "calibrated" : "hints as given");
    FakeDriver driver;
    testing::AddRack(driver.mutable_state(), "n", 2, "r0");
    Engine engine(EveryTierReserves(calibrate));
    double t = TeachStandard(engine, driver, 2000, 1000, 0);
    const size_t standard = engine.policy().tiers.size() - 2;
    EXPECT_DOUBLE_EQ(engine.calibration().Ratio(standard, true), 0.5) << "learned either way";
    EXPECT_DOUBLE_EQ(engine.DurationRatio(standard, true), calibrate ? 0.5 : 1) << "applied only when on";
    ASSERT_TRUE(engine.Enqueue(Gang("x", 1, 8, kStandard, t, 2000)).ok());
    engine.Pass(t, driver);
    ASSERT_TRUE(engine.IsRunning(GangKey("x")));
    ASSERT_TRUE(engine.Enqueue(Gang("head", 2, 8, kStandard, t + 1, 500)).ok());
    engine.Pass(t + 1, driver);
    ASSERT_EQ(engine.Heads().size(), 1u);
    EXPECT_DOUBLE_EQ(engine.Heads()[0].expected_start, t + (calibrate ? 1000 : 2000));
    // A spot gang (its tier has taught nothing: its hint as given) of 1,500 s ends by the
    // head's start as the hints give it but not by the start x is really expected to
    // give: backfilled, it would delay the head by 500 s.
    ASSERT_TRUE(engine.Enqueue(Gang("fill", 1, 8, kSpot, t + 2, 1500)).ok());
    engine.Pass(t + 2, driver);
    EXPECT_EQ(engine.IsRunning(GangKey("fill")), !calibrate);
  }
}

// The engine's own evictions say nothing about run times: a driver that stops a victim at
// once reports its end from inside Evict (the simulator does), and it is not learned from.
class StopsAtOnceDriver : public FakeDriver {
 public:
  std::optional<double> Evict(const GangKey& victim, const GangKey& preemptor, std::string_view reason,
                              bool graceful) override {
    auto notice = FakeDriver::Evict(victim, preemptor, reason, graceful);
    if (engine != nullptr) engine->OnEnded(victim, now);
    ++stopped;
    return notice;
  }
  Engine* engine = nullptr;
  double now = 0;
  int stopped = 0;
};

TEST(EngineCalibrationTest, ItsOwnEvictionsAreNotLearnedFrom) {
  StopsAtOnceDriver driver;
  testing::AddRack(driver.mutable_state(), "n", 1, "r0");
  EnginePolicy p = EnginePolicy::Defaults();
  for (TierPolicy& t : p.tiers) t.min_run_s = 0, t.max_preemptions_per_day = 1000;
  ASSERT_TRUE(p.Validate().ok());
  Engine engine(p);
  driver.engine = &engine;
  const size_t spot = p.tiers.size() - 1;
  double t = 0;
  for (size_t i = 0; i < kN; ++i) {
    const std::string victim = "spot-" + std::to_string(i);
    ASSERT_TRUE(engine.Enqueue(Gang(victim, 1, 8, kSpot, t, 100000)).ok());
    driver.now = t;
    engine.Pass(t, driver);
    ASSERT_TRUE(engine.IsRunning(GangKey(victim)));
    t += 10;
    const std::string high = "high-" + std::to_string(i);
    ASSERT_TRUE(engine.Enqueue(Gang(high, 1, 8, kHigh, t, 100)).ok());
    driver.now = t;
    engine.Pass(t, driver);
    ASSERT_TRUE(engine.IsRunning(GangKey(high))) << "it preempts the spot gang";
    t += 100;
    driver.Release(GangKey(high));
    engine.OnEnded(GangKey(high), t);
  }
  EXPECT_EQ(driver.stopped, static_cast<int>(kN));
  EXPECT_EQ(engine.calibration().Samples(spot, true), 0u) << "10 s of a 100,000 s hint is no run time";
  EXPECT_EQ(engine.calibration().Samples(1, true), kN) << "the high gangs ended by themselves";
  EXPECT_DOUBLE_EQ(engine.calibration().Ratio(1, true), 1);
}

// A gang the engine adopted (found running after a restart, or bound through kube-scheduler)
// started before it was seen: its end says nothing about how long it ran.
TEST(EngineCalibrationTest, AdoptedGangsAreNotLearnedFrom) {
  FakeDriver driver;
  testing::AddRack(driver.mutable_state(), "n", 2, "r0");
  Engine engine;
  for (size_t i = 0; i < kN; ++i) {
    const GangKey key("adopted-" + std::to_string(i));
    GangRequest g = Gang(key.str(), 1, 1, kStandard, 0, 10000);
    engine.AdoptRunning(g, "H100", {}, 100);
    engine.OnEnded(key, 200);
  }
  EXPECT_EQ(engine.calibration().Samples(engine.policy().tiers.size() - 2, true), 0u);
}

// A gang the preempt verb chose (kube-scheduler preempts it) ended early by that, not by itself.
TEST(EngineCalibrationTest, GangsThePreemptVerbChoseAreNotLearnedFrom) {
  FakeDriver driver;
  testing::AddRack(driver.mutable_state(), "n", 4, "r0");
  Engine engine;
  const size_t standard = engine.policy().tiers.size() - 2;
  for (size_t i = 0; i < kN; ++i) {
    const GangKey key("verb-victim-" + std::to_string(i));
    ASSERT_TRUE(engine.Enqueue(Gang(key.str(), 1, 1, kStandard, 0, 10000)).ok());
    engine.Pass(0, driver);
    ASSERT_TRUE(engine.IsRunning(key));
    engine.RecordPreemption(key.str(), 100, key);
    driver.Release(key);
    engine.OnEnded(key, 100);
  }
  EXPECT_EQ(engine.calibration().Samples(standard, true), 0u);
  // Recorded without naming the gang (a single pod's preemption), an end still teaches.
  const GangKey other("ends-by-itself");
  ASSERT_TRUE(engine.Enqueue(Gang(other.str(), 1, 1, kStandard, 0, 10000)).ok());
  engine.Pass(0, driver);
  engine.RecordPreemption("some-pod", 100);
  engine.OnEnded(other, 5000);
  EXPECT_EQ(engine.calibration().Samples(standard, true), 1u);
}

}  // namespace
}  // namespace phalanx::scheduling
