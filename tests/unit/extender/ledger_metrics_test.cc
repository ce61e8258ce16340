// Cluster GPU gauges from the ledger (extender/state/ledger_metrics.h): the state partition per
// pool, FGD fragmentation with the pods' task mix, pending gangs, and the exposition.
#include "extender/state/ledger_metrics.h"

#include <chrono>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/placement/fragmentation.h"
#include "extender/admission/engine_metrics.h"
#include "tests/unit/extender/test_cluster.h"

namespace phalanx::extender::testing {
namespace {

constexpr auto kNow = MonotonicTime{};

// dgx-0: 3 GPUs held by a running pod; dgx-1: GPU 6 unhealthy; box: 4 GPUs, no product
// label, cordoned. A gang of 2 x 8 GPUs waits (gated, no plan).
Ledger SmallCluster() {
  Ledger ledger({"kubernetes.io/hostname"});
  EXPECT_TRUE(ledger.UpsertNode(DgxNode("dgx-0")).ok());
  NodeInfo sick = DgxNode("dgx-1");
  sick.devices["dgx-1-gpu6"] = DeviceState{false, ""};
  EXPECT_TRUE(ledger.UpsertNode(sick).ok());
  NodeInfo box = PlainNode("box", 4);
  box.unschedulable = true;
  EXPECT_TRUE(ledger.UpsertNode(box).ok());
  ledger.UpsertPod(GpuPod("a", 3, 0, "dgx-0"), kNow);
  ledger.UpsertPod(GangPod("g", 0, 8, 2), kNow);
  ledger.UpsertPod(GangPod("g", 1, 8, 2), kNow);
  return ledger;
}

TEST(LedgerMetricsTest, PartitionsEveryGpuByPoolAndState) {
  const LedgerGpuSummary s = SummarizeLedger(SmallCluster());
  ASSERT_EQ(s.pools.size(), 2u);
  const PoolGpuSummary& h100 = s.pools.at("H100");
  EXPECT_EQ(h100.allocated, 3);
  EXPECT_EQ(h100.reserved, 0);
  EXPECT_EQ(h100.unhealthy, 1);
  EXPECT_EQ(h100.cordoned, 0);
  EXPECT_EQ(h100.free, 12);
  const PoolGpuSummary& box = s.pools.at(std::string(kUnlabelledPool));
  EXPECT_EQ(box.cordoned, 4);
  EXPECT_EQ(box.free, 0);
  EXPECT_EQ(box.fragmentation.ratio, 0);  // nothing free, nothing fragmented
  EXPECT_EQ(s.pending_gangs, 1);
}

TEST(LedgerMetricsTest, FragmentationIsFgdOverThePodsTaskMix) {
  const Ledger ledger = SmallCluster();
  // Pods ask for 3 GPUs once and 8 GPUs twice.
  const auto mix = LedgerTaskMix(ledger, "H100");
  ASSERT_EQ(mix.size(), 2u);
  EXPECT_EQ(mix[0].gpus, 3);
  EXPECT_EQ(mix[0].popularity, 1);
  EXPECT_EQ(mix[1].gpus, 8);
  EXPECT_EQ(mix[1].popularity, 2);
  // 3 GPUs fit on either node (nothing fragmented for them); 8 fit on neither, so all 12 free
  // GPUs are fragmented for 2/3 of the mix.
  const LedgerGpuSummary summary = SummarizeLedger(ledger);  // a reference into the temporary dangled (ASan)
  const auto& f = summary.pools.at("H100").fragmentation;
  EXPECT_DOUBLE_EQ(f.free_gpus, 12);
  EXPECT_DOUBLE_EQ(f.fragmented_gpus, 8);
  EXPECT_DOUBLE_EQ(f.ratio, 2.0 / 3.0);
}

TEST(LedgerMetricsTest, MatchesTheSimulatorsDefinitionOnOnePool) {
  Ledger ledger({"kubernetes.io/hostname"});
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(ledger.UpsertNode(DgxNode("dgx-" + std::to_string(i))).ok());
  for (int i = 0; i < 6; ++i) ledger.UpsertPod(GpuPod("p" + std::to_string(i), 1 + i % 4, 0, "dgx-" + std::to_string(i)), kNow);
  ledger.UpsertPod(GpuPod("big", 8), kNow);
  const auto mix = LedgerTaskMix(ledger, "H100");
  const auto want = placement::ClusterFragmentation(ledger.state(), mix);
  const auto got = SummarizeLedger(ledger).pools.at("H100").fragmentation;
  EXPECT_DOUBLE_EQ(got.ratio, want.ratio);
  EXPECT_DOUBLE_EQ(got.fragmented_gpus, want.fragmented_gpus);
  EXPECT_GT(got.ratio, 0);
}

TEST(LedgerMetricsTest, PodsForAnotherPoolDoNotShapeThisOne) {
  Ledger ledger({"kubernetes.io/hostname"});
  ASSERT_TRUE(ledger.UpsertNode(DgxNode("dgx-0")).ok());
  PodInfo a100 = GpuPod("elsewhere", 8);
  a100.pool_selector = "A100";
  ledger.UpsertPod(a100, kNow);
  ledger.UpsertPod(GpuPod("two", 2), kNow);
  const auto mix = LedgerTaskMix(ledger, "H100");
  ASSERT_EQ(mix.size(), 1u);
  EXPECT_EQ(mix[0].gpus, 2);
  // No GPU pods at all: the default training mix.
  EXPECT_EQ(LedgerTaskMix(Ledger({"kubernetes.io/hostname"}), "H100").size(), 4u);
}

std::string Line(const std::string& text, const std::string& series) {
  const size_t at = text.find("\n" + series + " ");
  if (at == std::string::npos) return "<missing " + series + ">";
  const size_t end = text.find('\n', at + 1);
  return text.substr(at + 1, end - at - 1);
}

TEST(LedgerMetricsTest, RefreshExposesTheExtendersLedger) {
  TestCluster c;
  metrics::Registry registry;
  LedgerMetrics gauges(registry);
  ASSERT_TRUE(c.ext.OnNode(DgxNode("dgx-0")).ok());
  ASSERT_TRUE(c.ext.OnNode(DgxNode("dgx-1")).ok());
  c.ext.OnPod(GpuPod("a", 3, 0, "dgx-0"));
  for (int i = 0; i < 2; ++i) c.ext.OnPod(GangPod("g", i, 4, 2));
  gauges.Refresh(c.ext);
  std::string text = registry.Expose();
  EXPECT_EQ(Line(text, R"(phalanx_extender_gpus{pool="H100",state="allocated"})"),
            R"(phalanx_extender_gpus{pool="H100",state="allocated"} 3)");
  EXPECT_EQ(Line(text, R"(phalanx_extender_gpus{pool="H100",state="free"})"),
            R"(phalanx_extender_gpus{pool="H100",state="free"} 13)");
  EXPECT_EQ(Line(text, "phalanx_extender_pending_gangs"), "phalanx_extender_pending_gangs 1");
  EXPECT_NE(text.find("phalanx_extender_fragmentation_ratio{pool=\"H100\"}"), std::string::npos) << text;

  // Admission reserves the gang's GPUs: pending -> reserved.
  c.ext.Tick();
  gauges.Refresh(c.ext);
  text = registry.Expose();
  EXPECT_EQ(Line(text, R"(phalanx_extender_gpus{pool="H100",state="reserved"})"),
            R"(phalanx_extender_gpus{pool="H100",state="reserved"} 8)");
  EXPECT_EQ(Line(text, "phalanx_extender_pending_gangs"), "phalanx_extender_pending_gangs 0");

  // A pool whose nodes are gone reads 0 rather than its last value.
  LedgerGpuSummary none;
  gauges.Update(none);
  text = registry.Expose();
  EXPECT_EQ(Line(text, R"(phalanx_extender_gpus{pool="H100",state="allocated"})"),
            R"(phalanx_extender_gpus{pool="H100",state="allocated"} 0)");
}

// The engine's learned run times (docs/algorithms.md §8.2 "Calibrated run times"): one series
// per tier and kind, 1 and 0 samples until gangs ended; /debug/state says the same.
TEST(EngineMetricsTest, ExposesTheLearnedDurationRatioPerTier) {
  TestCluster c;
  metrics::Registry registry;
  EngineMetrics gauges(registry);
  gauges.Refresh(c.ext);
  std::string text = registry.Expose();
  for (const char* tier : {"critical", "high", "standard", "spot"}) {
    for (const char* hinted : {"true", "false"}) {
      const std::string labels = fmt::format(R"({{tier="{}",hinted="{}"}})", tier, hinted);
      EXPECT_EQ(Line(text, "phalanx_extender_duration_ratio" + labels), "phalanx_extender_duration_ratio" + labels + " 1");
      EXPECT_EQ(Line(text, "phalanx_extender_duration_samples" + labels),
                "phalanx_extender_duration_samples" + labels + " 0");
    }
  }
  const json::Json state = c.ext.StateJson()["durationCalibration"];
  ASSERT_EQ(state.size(), 8u) << state.dump();
  EXPECT_EQ(state[0]["tier"], "critical");
  EXPECT_EQ(state[0]["ratio"], 1.0);
  // The engine's counts: nothing admitted yet; a gang admitted by a pass counts.
  EXPECT_NE(text.find("phalanx_extender_engine_total{event=\"preemptions_declined\"} 0"), std::string::npos) << text;
  ASSERT_TRUE(c.ext.OnNode(DgxNode("dgx-0")).ok());
  for (int i = 0; i < 2; ++i) c.ext.OnPod(GangPod("g", i, 4, 2));
  c.ext.Tick();
  gauges.Refresh(c.ext);
  text = registry.Expose();
  EXPECT_EQ(Line(text, R"(phalanx_extender_engine_total{event="admitted"})"),
            R"(phalanx_extender_engine_total{event="admitted"} 1)");
  gauges.Update({.stats = {}, .ratios = {{.tier = "standard", .hinted = true, .ratio = 0.4, .samples = 256}}});
  text = registry.Expose();
  EXPECT_EQ(Line(text, R"(phalanx_extender_duration_ratio{tier="standard",hinted="true"})"),
            R"(phalanx_extender_duration_ratio{tier="standard",hinted="true"} 0.4)");
  EXPECT_EQ(Line(text, R"(phalanx_extender_duration_samples{tier="standard",hinted="true"})"),
            R"(phalanx_extender_duration_samples{tier="standard",hinted="true"} 256)");
}

// The extender teaches the engine's calibration only with gangs it saw bound: a gang whose
// plan was dropped before anything bound (deleted while gated) ran nothing.
TEST(EngineMetricsTest, OnlyGangsThatBoundTeachTheCalibration) {
  TestCluster c;
  ASSERT_TRUE(c.ext.OnNode(DgxNode("dgx-0")).ok());
  auto spot_unhinted = [&] {
    for (const DurationRatioInfo& r : c.ext.ReadEngine().ratios)
      if (r.tier == "spot" && !r.hinted) return r.samples;
    return size_t{99};
  };
  // Planned, bound, ran ten minutes, ended.
  PodInfo ran = GangPod("ran", 0, 8, 1);
  c.ext.OnPod(ran);
  c.ext.Tick();
  ran.gated = false;
  ran.node_name = "dgx-0";
  ran.phase = PodPhase::kRunning;
  c.ext.OnPod(ran);
  c.clock.Advance(std::chrono::seconds(1));
  c.ext.Tick();
  c.clock.Advance(std::chrono::minutes(10));
  c.ext.OnPodDeleted(ran.uid);
  c.ext.Tick();
  EXPECT_EQ(spot_unhinted(), 1u);
  // Planned, then deleted before it bound.
  PodInfo dropped = GangPod("dropped", 0, 8, 1);
  c.ext.OnPod(dropped);
  c.clock.Advance(std::chrono::seconds(1));
  c.ext.Tick();
  c.clock.Advance(std::chrono::seconds(30));
  c.ext.OnPodDeleted(dropped.uid);
  c.ext.Tick();
  EXPECT_EQ(spot_unhinted(), 1u) << json::Dump(c.ext.StateJson()["durationCalibration"]);
}

}  // namespace
}  // namespace phalanx::extender::testing
