// IdleTracker and UsageHistory: the pure rules of idle detection and the 5-minute mean.
#include <gtest/gtest.h>

#include "device-plugin/usage/idle_tracker.h"
#include "device-plugin/usage/usage_history.h"
#include "device-plugin/usage/usage_snapshot.h"

namespace phalanx::device_plugin {
namespace {

using namespace std::chrono_literals;

const SystemTime kT0 = SystemTime(std::chrono::seconds(1'795'000'000));

PodUsage Pod(const std::string& uid, std::vector<std::optional<double>> sm) {
  return PodUsage{.uid = uid, .sm_util = std::move(sm)};
}

TEST(IdleTrackerTest, LowForTheWholeWindowIsIdleSinceTheStartOfTheLowPeriod) {
  IdleTracker t({.threshold_percent = 5, .window = 30min});
  for (auto at = 0s; at < 30min; at += 10s) {
    auto d = t.Update({Pod("a", {3.0}), Pod("b", {60.0})}, kT0 + at);
    ASSERT_FALSE(d[0].idle) << "flagged early at " << at.count() << " s";
    ASSERT_FALSE(d[1].idle);
  }
  auto d = t.Update({Pod("a", {3.0}), Pod("b", {60.0})}, kT0 + 30min);
  EXPECT_TRUE(d[0].idle);
  EXPECT_EQ(d[0].transition, IdleTransition::kBecameIdle);
  EXPECT_EQ(d[0].idle_since, kT0);
  EXPECT_FALSE(d[1].idle);
  // Still idle: no second transition.
  d = t.Update({Pod("a", {3.0})}, kT0 + 31min);
  EXPECT_TRUE(d[0].idle);
  EXPECT_EQ(d[0].transition, IdleTransition::kNone);
  // Busy again: active, and a new low period starts from scratch.
  d = t.Update({Pod("a", {5.0})}, kT0 + 32min);
  EXPECT_FALSE(d[0].idle);
  EXPECT_EQ(d[0].transition, IdleTransition::kBecameActive);
  d = t.Update({Pod("a", {0.0})}, kT0 + 33min);
  EXPECT_FALSE(d[0].idle);
}

TEST(IdleTrackerTest, EveryDeviceMustBeLowAndKnown) {
  IdleTracker t({.threshold_percent = 5, .window = 1min});
  t.Update({Pod("two", {1.0, 90.0}), Pod("mig", {1.0, std::nullopt}), Pod("none", {})}, kT0);
  auto d = t.Update({Pod("two", {1.0, 90.0}), Pod("mig", {1.0, std::nullopt}), Pod("none", {})}, kT0 + 2min);
  for (const auto& x : d) EXPECT_FALSE(x.idle) << x.uid;
}

TEST(IdleTrackerTest, UnknownPassesNeitherResetNorExtend) {
  IdleTracker t({.threshold_percent = 5, .window = 1min});
  t.Update({Pod("a", {1.0})}, kT0);
  t.Update({Pod("a", {std::nullopt})}, kT0 + 30s);  // a failing query
  auto d = t.Update({Pod("a", {1.0})}, kT0 + 1min);
  EXPECT_TRUE(d[0].idle);
  EXPECT_EQ(d[0].idle_since, kT0);
}

TEST(IdleTrackerTest, AdoptsAnExistingAnnotationAndForgetsPodsThatLeft) {
  IdleTracker t({.threshold_percent = 5, .window = 30min});
  PodUsage p = Pod("a", {1.0});
  p.annotated_since = kT0 - 1h;  // written by the plugin before it restarted
  auto d = t.Update({p}, kT0);
  EXPECT_TRUE(d[0].idle);
  EXPECT_EQ(d[0].transition, IdleTransition::kNone);
  EXPECT_EQ(d[0].idle_since, kT0 - 1h);
  t.Update({}, kT0 + 10s);  // the pod left
  d = t.Update({Pod("a", {1.0})}, kT0 + 20s);  // a new pod reusing the name/UID key starts over
  EXPECT_FALSE(d[0].idle);
}

TEST(IdleTrackerTest, AnAnnotationWrittenLaterIsKeptUntilThePodIsBusy) {
  IdleTracker t({.threshold_percent = 5, .window = 30min});
  t.Update({Pod("a", {1.0})}, kT0);  // low, not idle yet
  PodUsage p = Pod("a", {1.0});
  p.annotated_since = kT0 - 2h;  // someone (a previous plugin, a test) says it has been idle
  auto d = t.Update({p}, kT0 + 10s);
  EXPECT_TRUE(d[0].idle);
  EXPECT_EQ(d[0].idle_since, kT0 - 2h);
  p.sm_util = {std::nullopt};  // unmeasured: still stands
  EXPECT_TRUE(t.Update({p}, kT0 + 20s)[0].idle);
  p.sm_util = {50.0};  // busy: the tracker clears it (the monitor then removes the annotation)
  d = t.Update({p}, kT0 + 30s);
  EXPECT_FALSE(d[0].idle);
  EXPECT_EQ(d[0].transition, IdleTransition::kBecameActive);
}

TEST(UsageHistoryTest, MeanOverTheTrailingWindowOfKnownReadings) {
  UsageHistory h(5min);
  h.Add("g", kT0, 100.0);
  h.Add("g", kT0 + 1min, std::nullopt);
  h.Add("g", kT0 + 2min, 50.0);
  EXPECT_DOUBLE_EQ(*h.Mean("g", kT0 + 2min), 75.0);
  EXPECT_DOUBLE_EQ(*h.Mean("g", kT0 + 6min), 50.0);  // the first reading aged out
  EXPECT_FALSE(h.Mean("other", kT0).has_value());
  h.Trim(kT0 + 20min);
  EXPECT_FALSE(h.Mean("g", kT0 + 20min).has_value());
}

TEST(UsageSnapshotTest, SummaryRoundsAndTimestampsRoundTrip) {
  UsageSnapshot s;
  DeviceUsage d;
  d.sample.uuid = "GPU-a";
  d.sm_util_5m = 41.6;
  d.sample.memory_used_bytes = 1536ull * 1024 * 1024 + 1;
  s.devices.push_back(d);
  DeviceUsage none;
  none.sample.uuid = "MIG-b";
  s.devices.push_back(none);
  auto sum = Summarise(s);
  ASSERT_EQ(sum.size(), 1u);  // nothing measured on MIG-b: no entry at all
  EXPECT_EQ(sum["GPU-a"].sm_util_5m, 42.0);
  EXPECT_EQ(sum["GPU-a"].memory_used_mib, 1536u);
  EXPECT_EQ(FormatRfc3339(kT0), "2026-11-18T11:06:40Z");
  EXPECT_EQ(ParseRfc3339("2026-11-18T11:06:40Z"), kT0);
  EXPECT_FALSE(ParseRfc3339("yesterday").has_value());
}

}  // namespace
}  // namespace phalanx::device_plugin
