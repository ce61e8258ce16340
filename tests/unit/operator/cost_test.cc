// Price table parsing (strict, field named) and the usage accounting of one job: GPU-seconds
// from pod intervals, idle periods back-filled once, no double counting across steps.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "operator/api/time_format.h"
#include "operator/api/training_job_codec.h"
#include "operator/cost/price_table.h"
#include "operator/cost/usage.h"

namespace phalanx::op {
namespace {

using std::chrono::seconds;

constexpr const char* kTable = R"({
  "currency": "USD",
  "gpuHourly": {"NVIDIA-H100-80GB-HBM3": 2.5, "NVIDIA-A100-SXM4-80GB": 1.6},
  "defaultGpuHourly": 2.0,
  "tierMultiplier": {"critical": 1.0, "high": 1.0, "standard": 1.0, "spot": 0.4}})";

PriceTable Table() {
  auto t = ParsePriceTableText(kTable);
  EXPECT_TRUE(t.ok()) << t.status();
  return *t;
}

std::string ErrorOf(const std::string& text) {
  auto t = ParsePriceTableText(text, "cost");
  return t.ok() ? "" : std::string(t.status().message());
}

TEST(PriceTableTest, PricesModelsTiersAndUnknownModels) {
  PriceTable t = Table();
  EXPECT_EQ(t.currency, "USD");
  EXPECT_DOUBLE_EQ(t.Hourly("NVIDIA-H100-80GB-HBM3", "high"), 2.5);
  EXPECT_DOUBLE_EQ(t.Hourly("NVIDIA-H100-80GB-HBM3", "spot"), 1.0);
  EXPECT_DOUBLE_EQ(t.Hourly("NVIDIA-L4", "standard"), 2.0);  // not listed: default
  EXPECT_DOUBLE_EQ(t.Hourly("", "spot"), 0.8);               // unknown node: default
  // Round trip through the encoder.
  auto again = ParsePriceTable(EncodePriceTable(t));
  ASSERT_TRUE(again.ok());
  EXPECT_DOUBLE_EQ(again->Hourly("NVIDIA-A100-SXM4-80GB", "spot"), 1.6 * 0.4);
}

TEST(PriceTableTest, MalformedTablesAreRejectedNamingTheField) {
  EXPECT_EQ(ErrorOf(R"({"currency":"USD","defaultGpuHourly":1,"gpuHourly":{"H100":-2}})"),
            "cost.gpuHourly.H100: must be a number >= 0, got -2");
  EXPECT_EQ(ErrorOf(R"({"currency":"USD","defaultGpuHourly":1,"gpuHourly":{"H100":"2.5"}})"),
            "cost.gpuHourly.H100: must be a number >= 0, got string");
  EXPECT_EQ(ErrorOf(R"({"currency":"USD","defaultGpuHourly":1,"tierMultiplier":{"batch":0.5}})"),
            "cost.tierMultiplier.batch: unknown tier (known: critical, high, standard, spot)");
  EXPECT_EQ(ErrorOf(R"({"currency":"USD","defaultGpuHourly":1,"tierMultiplier":{"spot":true}})"),
            "cost.tierMultiplier.spot: must be a number >= 0, got boolean");
  EXPECT_EQ(ErrorOf(R"({"defaultGpuHourly":1})"), "cost.currency: required, a non-empty string such as \"USD\"");
  EXPECT_EQ(ErrorOf(R"({"currency":"USD"})"),
            "cost.defaultGpuHourly: required (the price of a GPU model gpuHourly does not list)");
  EXPECT_EQ(ErrorOf(R"({"currency":"USD","defaultGpuHourly":1,"gpuHourlyy":{}})"),
            "cost.gpuHourlyy: unknown field (known: currency, gpuHourly, defaultGpuHourly, tierMultiplier)");
  EXPECT_EQ(ErrorOf(R"({"currency":"USD","defaultGpuHourly":1,"gpuHourly":[1]})"),
            "cost.gpuHourly: expected object, got array");
  EXPECT_NE(ErrorOf("{not json").find("cost"), std::string::npos);
}

// The chart renders values.yaml's `cost` block into the operator's --price-table file: the shipped
// defaults must be a table the operator accepts.
TEST(PriceTableTest, ChartDefaultTableParses) {
  YAML::Node cost = YAML::LoadFile(std::string(PHALANX_TEST_SOURCE_DIR) + "/helm/phalanx/values.yaml")["cost"];
  ASSERT_TRUE(cost.IsMap());
  json::Json doc = {{"currency", cost["currency"].as<std::string>()},
                    {"defaultGpuHourly", cost["defaultGpuHourly"].as<double>()}};
  for (const auto& kv : cost["gpuHourly"]) doc["gpuHourly"][kv.first.as<std::string>()] = kv.second.as<double>();
  for (const auto& kv : cost["tierMultiplier"]) doc["tierMultiplier"][kv.first.as<std::string>()] = kv.second.as<double>();
  auto t = ParsePriceTable(doc);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_GT(t->Hourly("NVIDIA-H100-80GB-HBM3", "standard"), 0);
  EXPECT_LT(t->Hourly("NVIDIA-H100-80GB-HBM3", "spot"), t->Hourly("NVIDIA-H100-80GB-HBM3", "standard"));
}

TEST(PriceTableTest, TierFromPriorityClassThenPriorityBand) {
  EXPECT_EQ(TierOf("phalanx-spot", 100), "spot");
  EXPECT_EQ(TierOf("phalanx-critical", std::nullopt), "critical");
  EXPECT_EQ(TierOf("team-gold", 20000), "high");
  EXPECT_EQ(TierOf("", 1000), "standard");
  EXPECT_EQ(TierOf("", 0), "spot");
  EXPECT_EQ(TierOf("", std::nullopt), "standard");
}

TEST(PriceTableTest, MigDevicesCountAsTheirShareOfTheParentGpu) {
  EXPECT_DOUBLE_EQ(GpuEquivalents("nvidia.com/gpu", 8), 8);
  EXPECT_DOUBLE_EQ(GpuEquivalents("nvidia.com/mig-1g.10gb", 7), 1);
  EXPECT_DOUBLE_EQ(GpuEquivalents("nvidia.com/mig-3g.40gb", 2), 6.0 / 7);
  EXPECT_DOUBLE_EQ(GpuEquivalents("nvidia.com/mig-7g.80gb", 1), 1);
  EXPECT_DOUBLE_EQ(GpuEquivalents("cpu", 4), 0);
  EXPECT_DOUBLE_EQ(GpuEquivalents("nvidia.com/mig-xg.10gb", 1), 0);
}

// --- usage ----------------------------------------------------------------------------------

const SystemTime kT0 = SystemTime(seconds(1'795'000'000));

ObservedPod RunningPod(const std::string& name, double gpus, SystemTime start, const std::string& product) {
  ObservedPod p;
  p.name = name;
  p.phase = "Running";
  p.node_name = "node-" + name;
  p.gpus = gpus;
  p.start_time = start;
  p.priority = 1000;
  p.gpu_product = product;
  p.containers = {ObservedContainer{"trainer", true, false, 0, "", "", std::nullopt}};
  return p;
}

void Finish(ObservedPod& p, SystemTime at) {
  p.phase = "Succeeded";
  p.containers = {ObservedContainer{"trainer", false, true, 0, "Completed", "", at}};
}

TEST(UsageTest, CountsHeldIntervalsOnceAcrossSteps) {
  const PriceTable prices = Table();
  std::vector<ObservedPod> pods = {RunningPod("a", 8, kT0 + seconds(10), "NVIDIA-H100-80GB-HBM3"),
                                   RunningPod("b", 8, kT0 + seconds(10), "NVIDIA-A100-SXM4-80GB")};
  UsageStep s = AccountUsage(std::nullopt, {}, "phalanx-standard", &prices, kT0);
  EXPECT_EQ(s.usage.since, kT0);
  EXPECT_EQ(s.usage.currency, "USD");
  EXPECT_FALSE(s.holding);
  // 1 h later: 16 GPUs held for 3590 s.
  s = AccountUsage(s.usage, pods, "phalanx-standard", &prices, kT0 + seconds(3600));
  EXPECT_TRUE(s.holding);
  EXPECT_DOUBLE_EQ(s.added.gpu_seconds, 16 * 3590.0);
  EXPECT_NEAR(s.usage.cost, 8 * 3590.0 / 3600 * (2.5 + 1.6), 1e-9);
  EXPECT_EQ(s.tier, "standard");
  // The same step again (a 409 re-read, or an operator restart reading the written status)
  // adds nothing: only (accountedUntil, now] is counted.
  UsageStep again = AccountUsage(s.usage, pods, "phalanx-standard", &prices, kT0 + seconds(3600));
  EXPECT_TRUE(again.added.empty());
  EXPECT_DOUBLE_EQ(again.usage.gpu_seconds, s.usage.gpu_seconds);
  // Pod a ends at +4000; at +5000 only b is still held.
  Finish(pods[0], kT0 + seconds(4000));
  UsageStep later = AccountUsage(s.usage, pods, "phalanx-standard", &prices, kT0 + seconds(5000));
  EXPECT_DOUBLE_EQ(later.added.gpu_seconds, 8 * 400.0 + 8 * 1400.0);
  EXPECT_TRUE(later.holding);
  // Sub-second "now" never moves the watermark past what the status can store.
  UsageStep frac = AccountUsage(later.usage, pods, "phalanx-standard", &prices,
                                kT0 + seconds(5000) + std::chrono::milliseconds(700));
  EXPECT_TRUE(frac.added.empty());
  EXPECT_EQ(frac.usage.accounted_until, kT0 + seconds(5000));
}

// Issue 27's fault matrix: under a stalled or silently closed pod watch the operator's view of its
// pods lags. The status remembers what each pod was counted for, so the total converges to the
// pods' held time once the view catches up.
TEST(UsageTest, APodSeenEndedLateGivesBackWhatWasCountedPastItsEnd) {
  ObservedPod a = RunningPod("a", 8, kT0 + seconds(10), "");
  UsageStep s = AccountUsage(std::nullopt, {}, "", nullptr, kT0);
  s = AccountUsage(s.usage, {a}, "", nullptr, kT0 + seconds(3600));  // a looked running: 3590 s
  EXPECT_EQ(s.usage.pods->at("a"), kUsagePodHolding);
  Finish(a, kT0 + seconds(3000));  // ...but it had ended at +3000
  UsageStep late = AccountUsage(s.usage, {a}, "", nullptr, kT0 + seconds(5000));
  EXPECT_DOUBLE_EQ(late.added.gpu_seconds, -8 * 600.0);
  EXPECT_DOUBLE_EQ(late.usage.gpu_seconds, 8 * 2990.0);
  EXPECT_EQ(late.usage.pods->at("a"), kUsagePodReleased);
  // Never again, at any later step.
  UsageStep again = AccountUsage(late.usage, {a}, "", nullptr, kT0 + seconds(9000));
  EXPECT_TRUE(again.added.empty());
}

TEST(UsageTest, APodFirstSeenEndedIsCountedFromItsStart) {
  UsageStep s = AccountUsage(std::nullopt, {}, "", nullptr, kT0);
  s = AccountUsage(s.usage, {}, "", nullptr, kT0 + seconds(1000));
  ObservedPod a = RunningPod("a", 4, kT0 + seconds(100), "");
  Finish(a, kT0 + seconds(700));  // started and ended while the view lagged
  UsageStep seen = AccountUsage(s.usage, {a}, "", nullptr, kT0 + seconds(2000));
  EXPECT_DOUBLE_EQ(seen.added.gpu_seconds, 4 * 600.0);
  EXPECT_TRUE(AccountUsage(seen.usage, {a}, "", nullptr, kT0 + seconds(3000)).added.empty());
}

TEST(UsageTest, AFinishedAtAheadOfTheOperatorsClockIsCountedToTheEnd) {
  ObservedPod a = RunningPod("a", 8, kT0, "");
  UsageStep s = AccountUsage(UsageStatus{.since = kT0, .accounted_until = kT0, .pods = {{}}}, {a}, "", nullptr,
                             kT0 + seconds(100));
  Finish(a, kT0 + seconds(201));  // kubelet's clock (or its rounding) is a second ahead of ours
  UsageStep end = AccountUsage(s.usage, {a}, "", nullptr, kT0 + seconds(200) + std::chrono::milliseconds(600));
  EXPECT_DOUBLE_EQ(end.usage.gpu_seconds, 8 * 201.0);
  EXPECT_EQ(end.usage.accounted_until, kT0 + seconds(200));
  EXPECT_TRUE(AccountUsage(end.usage, {a}, "", nullptr, kT0 + seconds(300)).added.empty());
}

TEST(UsageTest, AStatusWrittenBeforePodsWereTrackedCountsAsItDid) {
  // An older operator counted b to its end at +500; its status has no `pods`.
  ObservedPod a = RunningPod("a", 8, kT0, ""), b = RunningPod("b", 8, kT0, "");
  Finish(b, kT0 + seconds(500));
  UsageStatus legacy{.gpu_seconds = 8 * 1000.0 + 8 * 500.0, .since = kT0, .accounted_until = kT0 + seconds(1000)};
  UsageStep s = AccountUsage(legacy, {a, b}, "", nullptr, kT0 + seconds(1600));
  EXPECT_DOUBLE_EQ(s.added.gpu_seconds, 8 * 600.0);  // a's new 600 s; b neither again nor given back
  EXPECT_EQ(s.usage.pods->at("a"), kUsagePodHolding);
  EXPECT_EQ(s.usage.pods->at("b"), kUsagePodReleased);
}

TEST(UsageTest, SpotTierAndMigFractionsArePriced) {
  const PriceTable prices = Table();
  ObservedPod p = RunningPod("mig", 3.0 / 7, kT0, "NVIDIA-A100-SXM4-80GB");
  p.priority = 100;
  UsageStep s = AccountUsage(UsageStatus{.currency = "USD", .since = kT0, .accounted_until = kT0}, {p}, "phalanx-spot",
                             &prices, kT0 + seconds(7 * 3600));
  EXPECT_NEAR(s.added.gpu_seconds, 3 * 3600.0, 1e-6);
  EXPECT_NEAR(s.added.cost, 3 * 1.6 * 0.4, 1e-9);
  EXPECT_EQ(s.tier, "spot");
}

TEST(UsageTest, IdlePeriodIsBackFilledOnceThenCountedIncrementally) {
  const PriceTable prices = Table();
  UsageStatus u{.currency = "USD", .since = kT0, .accounted_until = kT0};
  std::vector<ObservedPod> pods = {RunningPod("a", 8, kT0, "NVIDIA-H100-80GB-HBM3"),
                                   RunningPod("b", 8, kT0, "NVIDIA-H100-80GB-HBM3")};
  UsageStep s = AccountUsage(u, pods, "", &prices, kT0 + seconds(3600));
  EXPECT_DOUBLE_EQ(s.added.idle_gpu_seconds, 0);
  EXPECT_FALSE(s.idle_set_changed);
  // At +4000 the device plugin marks b idle since +2200 (its window began then).
  pods[1].annotations[std::string(kAnnotationIdleSince)] = FormatRfc3339(kT0 + seconds(2200));
  s = AccountUsage(s.usage, pods, "", &prices, kT0 + seconds(4000));
  EXPECT_TRUE(s.idle_set_changed);
  EXPECT_DOUBLE_EQ(s.added.idle_gpu_seconds, 8 * 1800.0);  // back-filled from +2200
  EXPECT_DOUBLE_EQ(s.idle_gpus, 8);
  EXPECT_NEAR(s.added.idle_cost, 8 * 1800.0 / 3600 * 2.5, 1e-9);
  EXPECT_EQ(s.usage.idle_pods.at("b"), FormatRfc3339(kT0 + seconds(2200)));
  // Next step: only the new 600 s, even if the plugin rewrote idle-since (its restart).
  pods[1].annotations[std::string(kAnnotationIdleSince)] = FormatRfc3339(kT0 + seconds(4300));
  UsageStep next = AccountUsage(s.usage, pods, "", &prices, kT0 + seconds(4600));
  EXPECT_FALSE(next.idle_set_changed);
  EXPECT_DOUBLE_EQ(next.added.idle_gpu_seconds, 8 * 300.0);  // from +4300 (its new idle-since)
  // Busy again: the annotation goes, the pod leaves idlePods, nothing more is idle.
  pods[1].annotations.clear();
  UsageStep busy = AccountUsage(next.usage, pods, "", &prices, kT0 + seconds(5000));
  EXPECT_TRUE(busy.idle_set_changed);
  EXPECT_TRUE(busy.usage.idle_pods.empty());
  EXPECT_DOUBLE_EQ(busy.added.idle_gpu_seconds, 0);
  EXPECT_DOUBLE_EQ(busy.usage.idle_gpu_seconds, 8 * 1800.0 + 8 * 300.0);
  EXPECT_DOUBLE_EQ(busy.usage.gpu_seconds, 16 * 5000.0);
}

TEST(UsageTest, IdleNeverBackFillsBeforeAccountingBeganNorBeforeThePodStarted) {
  UsageStatus u{.since = kT0 + seconds(1000), .accounted_until = kT0 + seconds(1000)};
  ObservedPod p = RunningPod("a", 2, kT0 + seconds(500), "");
  p.annotations[std::string(kAnnotationIdleSince)] = FormatRfc3339(kT0);  // before both
  UsageStep s = AccountUsage(u, {p}, "", nullptr, kT0 + seconds(2000));
  EXPECT_DOUBLE_EQ(s.added.gpu_seconds, 2 * 1000.0);
  EXPECT_DOUBLE_EQ(s.added.idle_gpu_seconds, 2 * 1000.0);
  EXPECT_DOUBLE_EQ(s.usage.cost, 0);  // no price table: no cost, no currency
  EXPECT_TRUE(s.usage.currency.empty());
  // A malformed idle-since is ignored (never guessed).
  p.annotations[std::string(kAnnotationIdleSince)] = "yesterday";
  UsageStep bad = AccountUsage(std::nullopt, {p}, "", nullptr, kT0 + seconds(2000));
  EXPECT_TRUE(bad.usage.idle_pods.empty());
}

TEST(UsageTest, CurrencyChangeRestartsCostButKeepsGpuSeconds) {
  PriceTable eur = Table();
  eur.currency = "EUR";
  UsageStatus u{.gpu_seconds = 100, .cost = 9, .currency = "USD", .since = kT0, .accounted_until = kT0};
  UsageStep s = AccountUsage(u, {}, "", &eur, kT0 + seconds(10));
  EXPECT_TRUE(s.currency_changed);
  EXPECT_EQ(s.usage.currency, "EUR");
  EXPECT_DOUBLE_EQ(s.usage.cost, 0);
  EXPECT_DOUBLE_EQ(s.usage.gpu_seconds, 100);
}

TEST(UsageTest, StatusRoundTripsThroughTheCodec) {
  TrainingJobStatus st;
  st.usage = UsageStatus{7200.5, 1800, 5.25, 1.25, "USD", kT0, kT0 + seconds(60), {{"x-a1-0", "2026-11-26T10:00:00Z"}}};
  auto back = DecodeStatus(EncodeStatus(st));
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_TRUE(back->usage);
  EXPECT_DOUBLE_EQ(back->usage->gpu_seconds, 7200.5);
  EXPECT_DOUBLE_EQ(back->usage->idle_cost, 1.25);
  EXPECT_EQ(back->usage->accounted_until, kT0 + seconds(60));
  EXPECT_EQ(back->usage->idle_pods, st.usage->idle_pods);
  EXPECT_EQ(EncodeStatus(*back), EncodeStatus(st));
  // A usage the operator cannot read is refused like the rest of the status (never overwritten).
  json::Json bad = EncodeStatus(st);
  bad["usage"]["gpuSeconds"] = "lots";
  auto refused = DecodeStatus(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("status.usage.gpuSeconds"), std::string::npos);
}

}  // namespace
}  // namespace phalanx::op
