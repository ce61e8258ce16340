// Cost of a replay (docs/simulator.md "Cost"): GPU-hours held per tier and GPU model, priced
// with the shared price table (core/cost) and tier multipliers, and the cost of lost work.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/cost/price_table.h"
#include "sim/engine/run.h"
#include "sim/report/writers.h"
#include "tests/unit/sim/test_util.h"

namespace phalanx::sim {
namespace {

using testing::MakeJob;
using testing::MakeWorkload;

cost::PriceTable Prices() {
  auto t = cost::ParsePriceTableText(
      R"({"currency": "USD", "gpuHourly": {"H100": 2.5, "A100": 1.6}, "defaultGpuHourly": 9,
          "tierMultiplier": {"spot": 0.4}})");
  EXPECT_TRUE(t.ok()) << t.status();
  return *t;
}

// One 8-GPU H100 node and one 8-GPU A100 node.
ClusterSpec TwoModels() {
  ClusterSpec spec;
  spec.name = "two-models";
  spec.groups.push_back(NodeGroup{.name = "h", .count = 1, .gpu_model = "H100", .gpus_per_node = 8});
  spec.groups.push_back(NodeGroup{.name = "a", .count = 1, .gpu_model = "A100", .gpus_per_node = 8});
  return spec;
}

Job On(Job j, const std::string& pool) {
  j.pool = pool;
  return j;
}

SimulationReport Replay(const Workload& w, const std::string& policy, bool priced) {
  RunOptions opts;
  opts.policies = *ParsePolicyList(policy);
  if (priced) opts.sim.prices = Prices();
  auto r = RunSimulation(TwoModels(), w, opts);
  EXPECT_TRUE(r.ok()) << r.status();
  return *r;
}

const TierReport& Tier(const PolicyReport& p, const std::string& name) {
  for (const auto& t : p.tiers)
    if (t.tier == name) return t;
  ADD_FAILURE() << "no tier " << name;
  return p.tiers.front();
}

TEST(SimCostTest, PricesHeldGpuHoursPerTierAndModelWithMultipliers) {
  // A standard job on the H100 node for 1 h, a spot job on the A100 node for 2 h.
  Workload w = MakeWorkload({On(MakeJob(0, 3600, 1, 8, kStandardPriority), "H100"),
                             On(MakeJob(0, 7200, 1, 8, kSpotPriority), "A100")});
  SimulationReport r = Replay(w, "gang-fifo", true);
  const PolicyReport& p = r.policies.front();
  ASSERT_TRUE(p.priced);
  EXPECT_EQ(p.currency, "USD");
  const TierReport& standard = Tier(p, "standard");
  const TierReport& spot = Tier(p, "spot");
  EXPECT_NEAR(standard.gpu_hours, 8, 1e-9);
  EXPECT_NEAR(standard.gpu_hours_by_model.at("H100"), 8, 1e-9);
  EXPECT_NEAR(standard.cost, 8 * 2.5, 1e-9);
  EXPECT_NEAR(spot.gpu_hours_by_model.at("A100"), 16, 1e-9);
  EXPECT_NEAR(spot.cost, 16 * 1.6 * 0.4, 1e-9);
  EXPECT_NEAR(p.cost, 20 + 10.24, 1e-9);
  EXPECT_NEAR(p.lost_cost, 0, 1e-12);
  // Held GPU-hours over all tiers are the report's allocated GPU-time.
  EXPECT_NEAR(standard.gpu_hours + spot.gpu_hours, p.gpu_allocation * p.total_gpus * p.makespan_s / 3600, 1e-6);
}

TEST(SimCostTest, LostWorkOfAPreemptedSpotJobIsPricedAtItsModelAndTier) {
  // A spot job without checkpoints holds the H100 node; a high job needs it 30 min later.
  Workload w = MakeWorkload({On(MakeJob(0, 7200, 1, 8, kSpotPriority), "H100"),
                             On(MakeJob(1800, 3600, 1, 8, kHighPriority), "H100")});
  SimulationReport r = Replay(w, "phalanx", true);
  const PolicyReport& p = r.policies.front();
  ASSERT_GE(p.preemptions, 1);
  const TierReport& spot = Tier(p, "spot");
  EXPECT_GT(spot.lost_gpu_hours, 0);
  EXPECT_NEAR(spot.lost_gpu_hours_by_model.at("H100"), spot.lost_gpu_hours, 1e-9);
  EXPECT_NEAR(spot.lost_cost, spot.lost_gpu_hours * 2.5 * 0.4, 1e-9);
  EXPECT_NEAR(p.lost_cost, spot.lost_cost, 1e-9);
  // The lost attempt's GPU-hours were held too: the spot tier paid for more than its 16.
  EXPECT_NEAR(spot.gpu_hours, 16 + spot.lost_gpu_hours, 0.2);
  EXPECT_NEAR(Tier(p, "high").cost, 8 * 2.5, 1e-9);
}

TEST(SimCostTest, WithoutPricesOnlyHoursAreReportedAndNumbersDoNotChange) {
  Workload w = MakeWorkload({On(MakeJob(0, 7200, 1, 8, kSpotPriority), "H100"),
                             On(MakeJob(1800, 3600, 1, 8, kHighPriority), "H100")});
  SimulationReport plain = Replay(w, "phalanx", false);
  SimulationReport priced = Replay(w, "phalanx", true);
  EXPECT_FALSE(plain.policies.front().priced);
  auto a = nlohmann::json::parse(RenderJson(plain, false));
  auto b = nlohmann::json::parse(RenderJson(priced, false));
  EXPECT_FALSE(a.contains("prices"));
  EXPECT_FALSE(a["policies"][0].contains("cost"));
  EXPECT_FALSE(a["policies"][0]["tiers"][0].contains("cost"));
  EXPECT_TRUE(b["policies"][0].contains("cost"));
  EXPECT_EQ(b["prices"]["currency"], "USD");
  // Pricing only adds figures: everything else is the same replay.
  b.erase("prices");
  b["policies"][0].erase("cost");
  for (auto& t : b["policies"][0]["tiers"]) {
    t.erase("cost");
    t.erase("lostCost");
  }
  EXPECT_EQ(a, b);
}

TEST(SimCostTest, QueuesArePricedAndAddUpToThePolicyTotal) {
  std::string yaml = "name: q\nnodeGroups:\n  - {name: h, count: 2, gpuModel: H100, gpusPerNode: 8}\n"
                     "queues:\n  - {name: a, quotas: [{pool: H100, nominal: 8}]}\n"
                     "  - {name: b, quotas: [{pool: H100, nominal: 8}]}\ndefaultQueue: a\n";
  auto cluster = ParseClusterSpec(yaml, "q.yaml");
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  Job a = MakeJob(0, 3600, 1, 8, kStandardPriority);
  a.queue = "a";
  Job b = MakeJob(0, 7200, 1, 8, kSpotPriority);
  b.queue = "b";
  RunOptions opts;
  opts.policies = {"phalanx"};
  opts.sim.prices = Prices();
  auto r = RunSimulation(*cluster, MakeWorkload({a, b}), opts);
  ASSERT_TRUE(r.ok()) << r.status();
  const PolicyReport& p = r->policies.front();
  ASSERT_EQ(p.queues.size(), 2u);
  double sum = 0;
  for (const auto& q : p.queues) sum += q.cost;
  EXPECT_NEAR(sum, p.cost, 1e-9);
  EXPECT_NEAR(p.queues[0].cost, 8 * 2.5, 1e-9);
  EXPECT_NEAR(p.queues[1].cost, 16 * 2.5 * 0.4, 1e-9);
}

}  // namespace
}  // namespace phalanx::sim
