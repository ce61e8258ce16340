// `phalanx report --from-sim` and `phalanx simulate --prices` price a replay with one parser
// and one formula: given the same table, the report reproduces the simulator's cost figures.
#include <gtest/gtest.h>

#include "cli/report/sim_cost.h"
#include "core/cost/price_table.h"
#include "sim/engine/run.h"
#include "sim/model/tiers.h"
#include "sim/report/writers.h"
#include "sim/trace/synthetic.h"

namespace phalanx::cli {
namespace {

TEST(SimCostAgreementTest, ReportFromSimAgreesWithTheSimulatorsOwnCost) {
  auto prices = cost::ParsePriceTableText(
      R"({"currency": "EUR", "gpuHourly": {"H100": 2.5, "L40S": 0.9}, "defaultGpuHourly": 7,
          "tierMultiplier": {"critical": 1.5, "spot": 0.3}})");
  ASSERT_TRUE(prices.ok()) << prices.status();
  sim::ClusterSpec cluster;
  cluster.name = "mixed";
  cluster.groups.push_back(sim::NodeGroup{.name = "h", .count = 4, .gpu_model = "H100", .gpus_per_node = 8});
  cluster.groups.push_back(sim::NodeGroup{.name = "l", .count = 4, .gpu_model = "L40S", .gpus_per_node = 4});
  sim::Workload w = sim::GenerateSynthetic(
      {.jobs = 200, .seed = 3, .cluster_gpus = 48, .load = 1.5, .mean_duration_s = 1800, .max_gang_members = 4});
  sim::RunOptions opts;
  opts.policies = *sim::ParsePolicyList("phalanx,gang-fifo");
  opts.sim.prices = *prices;
  auto replay = sim::RunSimulation(cluster, w, opts);
  ASSERT_TRUE(replay.ok()) << replay.status();
  auto doc = json::Parse(sim::RenderJson(*replay));
  ASSERT_TRUE(doc.ok());
  // Priced with the table the report carries (what `phalanx report --from-sim` does without --prices).
  auto embedded = cost::ParsePriceTable((*doc)["prices"], "prices");
  ASSERT_TRUE(embedded.ok()) << embedded.status();
  auto priced = PriceSimReport(*doc, *embedded, "");
  ASSERT_TRUE(priced.ok()) << priced.status();
  ASSERT_EQ(priced->policies.size(), replay->policies.size());
  bool some_lost = false;
  for (size_t i = 0; i < replay->policies.size(); ++i) {
    const sim::PolicyReport& s = replay->policies[i];
    const SimPolicyCost& c = priced->policies[i];
    ASSERT_TRUE(s.priced);
    EXPECT_NEAR(c.tier_cost, s.cost, 1e-6 * std::max(1.0, s.cost)) << s.policy;
    EXPECT_NEAR(c.lost_cost, s.lost_cost, 1e-9 + 1e-9 * s.lost_cost) << s.policy;
    ASSERT_EQ(c.tiers.size(), s.tiers.size());
    for (size_t t = 0; t < s.tiers.size(); ++t) {
      EXPECT_TRUE(c.tiers[t].by_model);
      EXPECT_NEAR(c.tiers[t].gpu_hours, s.tiers[t].gpu_hours, 1e-6) << s.policy << " " << s.tiers[t].tier;
      EXPECT_NEAR(c.tiers[t].cost, s.tiers[t].cost, 1e-6) << s.policy << " " << s.tiers[t].tier;
      EXPECT_NEAR(c.tiers[t].lost_cost, s.tiers[t].lost_cost, 1e-9) << s.policy << " " << s.tiers[t].tier;
    }
    some_lost = some_lost || s.lost_cost > 0;
    EXPECT_GT(s.cost, 0);
  }
  EXPECT_TRUE(some_lost) << "the workload should preempt something under phalanx";
}

}  // namespace
}  // namespace phalanx::cli

namespace phalanx::cli {
namespace {

TEST(SimCostAgreementTest, ASingleModelReportPricesItsAllocatedColumnsAsThatModel) {
  auto prices = cost::ParsePriceTableText(R"({"currency": "USD", "gpuHourly": {"H100": 2.5}, "defaultGpuHourly": 2})");
  ASSERT_TRUE(prices.ok());
  json::Json report = {{"cluster", {{"name", "c"}, {"gpus", 8}}},
                       {"policies",
                        {{{"policy", "phalanx"}, {"makespanSeconds", 3600}, {"gpuAllocation", 1},
                          {"tiers", {{{"tier", "standard"}, {"lostGpuHours", 0}, {"gpuHours", 8},
                                      {"gpuHoursByModel", {{"H100", 8}}}, {"lostGpuHoursByModel", json::Json::object()}}}}}}}};
  auto r = PriceSimReport(report, *prices, "");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->gpu_model, "H100");
  EXPECT_DOUBLE_EQ(r->policies[0].allocated_cost, 8 * 2.5);
  EXPECT_DOUBLE_EQ(r->policies[0].tier_cost, 8 * 2.5);
  // Asked for another model: the allocated columns follow the flag, the per-tier cost does not.
  auto other = PriceSimReport(report, *prices, "A100");
  ASSERT_TRUE(other.ok());
  EXPECT_DOUBLE_EQ(other->policies[0].allocated_cost, 8 * 2.0);
  EXPECT_DOUBLE_EQ(other->policies[0].tier_cost, 8 * 2.5);
}

}  // namespace
}  // namespace phalanx::cli
