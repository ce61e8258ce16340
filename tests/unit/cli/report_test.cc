// `phalanx report`: the math (hours from GPU-seconds, totals per namespace and queue, currencies
// never mixed, simulator GPU-hours priced per tier) and the rendering, plus bad input named.
#include <gtest/gtest.h>

#include "cli/report/sim_cost.h"
#include "cli/report/usage_report.h"

namespace phalanx::cli {
namespace {

using json::Json;

Json Job(const std::string& ns, const std::string& name, double gpu_s, double idle_s, double cost,
         const std::string& queue = "", const std::string& currency = "USD") {
  Json j = {{"metadata", {{"namespace", ns}, {"name", name}}},
            {"spec", {{"scheduling", {{"priorityClassName", "phalanx-spot"}}}}},
            {"status", {{"phase", "Running"},
                        {"usage", {{"gpuSeconds", gpu_s}, {"idleGpuSeconds", idle_s}, {"since", "2026-11-26T10:00:00Z"}}}}}};
  if (!currency.empty()) {
    j["status"]["usage"]["cost"] = cost;
    j["status"]["usage"]["idleCost"] = cost * idle_s / gpu_s;
    j["status"]["usage"]["currency"] = currency;
  }
  if (!queue.empty()) j["metadata"]["labels"][kQueueLabel] = queue;
  return j;
}

// The operator labels a job's pods with spec.scheduling.queue (the documented way to name a
// queue); the report groups by it, and by the TrainingJob's own label only when the spec has none.
TEST(UsageReportTest, TheQueueIsSpecSchedulingQueueThenTheJobsLabel) {
  Json by_spec = Job("team-a", "spec", 3600, 0, 2, "");
  by_spec["spec"]["scheduling"]["queue"] = "research";
  Json both = Job("team-a", "both", 3600, 0, 2, "old-label");
  both["spec"]["scheduling"]["queue"] = "research";
  Json by_label = Job("team-b", "label", 7200, 0, 4, "prod");
  auto rep = BuildUsageReport(Json{{"items", {by_spec, both, by_label}}});
  ASSERT_TRUE(rep.ok()) << rep.status();
  ASSERT_EQ(rep->queues.size(), 2u);
  EXPECT_EQ(rep->queues[0].key, "prod");
  EXPECT_DOUBLE_EQ(rep->queues[0].gpu_hours, 2);
  EXPECT_EQ(rep->queues[1].key, "research");
  EXPECT_EQ(rep->queues[1].jobs, 2);
}

TEST(UsageReportTest, SumsPerNamespaceAndConvertsToHours) {
  Json list = {{"items", {Job("team-b", "y", 7200, 0, 5), Job("team-a", "x", 36000, 9000, 25),
                          Job("team-a", "w", 3600, 3600, 2.5)}}};
  auto rep = BuildUsageReport(list);
  ASSERT_TRUE(rep.ok()) << rep.status();
  ASSERT_EQ(rep->jobs.size(), 3u);
  EXPECT_EQ(rep->jobs[0].name, "w");  // sorted by namespace, name
  EXPECT_EQ(rep->jobs[0].tier, "spot");
  EXPECT_DOUBLE_EQ(rep->jobs[1].gpu_hours, 10);
  EXPECT_DOUBLE_EQ(rep->jobs[1].idle_gpu_hours, 2.5);
  ASSERT_EQ(rep->namespaces.size(), 2u);
  EXPECT_EQ(rep->namespaces[0].key, "team-a");
  EXPECT_EQ(rep->namespaces[0].jobs, 2);
  EXPECT_DOUBLE_EQ(rep->namespaces[0].gpu_hours, 11);
  EXPECT_DOUBLE_EQ(rep->namespaces[0].cost, 27.5);
  EXPECT_DOUBLE_EQ(rep->total.cost, 32.5);
  EXPECT_EQ(rep->total.currency, "USD");
  EXPECT_TRUE(rep->queues.empty());  // no job carries a queue label: no queue table

  const std::string table = RenderUsageTable(*rep);
  EXPECT_NE(table.find("NAMESPACE  JOB  TIER  PHASE    GPU-HOURS  IDLE-GPU-HOURS  IDLE   COST  IDLE-COST  CURRENCY"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("team-a     x    spot  Running       10.0             2.5   25%  25.00       6.25  USD"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("team-a        2       11.0             3.5   32%  27.50       8.75  USD"), std::string::npos)
      << table;
  EXPECT_NE(table.find("TOTAL         3       13.0             3.5   27%  32.50       8.75  USD"), std::string::npos)
      << table;
  EXPECT_EQ(table.find("QUEUE"), std::string::npos);

  Json j = RenderUsageJson(*rep);
  EXPECT_EQ(j["namespaces"][0]["namespace"], "team-a");
  EXPECT_DOUBLE_EQ(j["namespaces"][0]["cost"].get<double>(), 27.5);
  EXPECT_DOUBLE_EQ(j["total"]["gpuHours"].get<double>(), 13);
  EXPECT_FALSE(j.contains("queues"));
}

TEST(UsageReportTest, QueueColumnAppearsOnlyWhenJobsCarryTheLabel) {
  Json list = {{"items", {Job("a", "x", 3600, 0, 2, "research"), Job("a", "y", 7200, 0, 4, "prod"),
                          Job("b", "z", 3600, 0, 2)}}};
  auto rep = BuildUsageReport(list);
  ASSERT_TRUE(rep.ok());
  ASSERT_EQ(rep->queues.size(), 3u);  // "", prod, research
  EXPECT_EQ(rep->queues[0].key, "");
  EXPECT_EQ(rep->queues[1].key, "prod");
  EXPECT_DOUBLE_EQ(rep->queues[1].cost, 4);
  const std::string table = RenderUsageTable(*rep);
  EXPECT_NE(table.find("QUEUE"), std::string::npos);
  EXPECT_NE(table.find("(no queue)"), std::string::npos);
  EXPECT_EQ(RenderUsageJson(*rep)["queues"][2]["queue"], "research");
}

TEST(UsageReportTest, CurrenciesAreNeverAddedTogether) {
  Json list = {{"items", {Job("a", "x", 3600, 0, 2), Job("a", "y", 3600, 0, 3, "", "EUR"),
                          Job("a", "z", 3600, 0, 0, "", "")}}};
  auto rep = BuildUsageReport(list);
  ASSERT_TRUE(rep.ok());
  EXPECT_TRUE(rep->mixed_currencies);
  EXPECT_DOUBLE_EQ(rep->total.cost, 0);
  EXPECT_DOUBLE_EQ(rep->total.gpu_hours, 3);
  EXPECT_EQ(rep->namespaces.size(), 3u);  // one row per (namespace, currency)
  EXPECT_NE(RenderUsageTable(*rep).find("different currencies"), std::string::npos);
  EXPECT_TRUE(RenderUsageJson(*rep)["total"]["mixedCurrencies"].get<bool>());
}

TEST(UsageReportTest, JobsWithoutUsageAreListedAndMalformedUsageIsNamed) {
  Json bare = {{"metadata", {{"namespace", "a"}, {"name", "new"}}}, {"spec", Json::object()}};
  auto rep = BuildUsageReport(Json{{"items", {bare}}});
  ASSERT_TRUE(rep.ok());
  EXPECT_FALSE(rep->jobs[0].has_usage);
  EXPECT_NE(RenderUsageTable(*rep).find("no status.usage yet"), std::string::npos);
  EXPECT_EQ(RenderUsageTable(UsageReport{}), "No TrainingJobs found.\n");

  Json bad = Job("ml", "llama", 3600, 0, 1);
  bad["status"]["usage"]["gpuSeconds"] = "lots";
  auto err = BuildUsageReport(Json{{"items", {Job("ml", "ok", 1, 0, 1), bad}}});
  ASSERT_FALSE(err.ok());
  EXPECT_EQ(err.status().message(), "items[1] (ml/llama): status.usage.gpuSeconds: expected number, got string");
  EXPECT_FALSE(BuildUsageReport(Json{{"kind", "Status"}}).ok());
}

// A simulator report as sim/report/json_writer.cc writes it (the fields report reads).
Json SimReport() {
  return Json::parse(R"({
    "cluster": {"name": "demo", "nodes": 2, "gpus": 16},
    "policies": [
      {"policy": "phalanx", "makespanSeconds": 36000, "gpuAllocation": 0.5, "gpuUtilisation": 0.25,
       "idleHeldGpuHours": 2, "lostGpuHours": 10,
       "tiers": [{"tier": "critical", "lostGpuHours": 0}, {"tier": "spot", "lostGpuHours": 10}]},
      {"policy": "future", "makespanSeconds": 3600, "gpuAllocation": 1,
       "tiers": [{"tier": "spot", "lostGpuHours": 0, "gpuHours": 16}]}]})");
}

cost::PriceTable Prices() {
  auto t = cost::ParsePriceTableText(
      R"({"currency":"USD","gpuHourly":{"H100":2.5},"defaultGpuHourly":2,"tierMultiplier":{"spot":0.4}})");
  EXPECT_TRUE(t.ok());
  return *t;
}

TEST(SimCostTest, PricesAllocatedBusyIdleAndLostGpuHours) {
  auto r = PriceSimReport(SimReport(), Prices(), "H100");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->policies.size(), 2u);
  const SimPolicyCost& p = r->policies[0];
  EXPECT_DOUBLE_EQ(p.allocated_gpu_hours, 0.5 * 16 * 10);  // gpuAllocation x GPUs x makespan
  EXPECT_DOUBLE_EQ(p.allocated_cost, 80 * 2.5);
  EXPECT_DOUBLE_EQ(p.busy_gpu_hours, 40);
  EXPECT_DOUBLE_EQ(p.idle_held_cost, 2 * 2.5);
  EXPECT_DOUBLE_EQ(p.lost_gpu_hours, 10);
  EXPECT_DOUBLE_EQ(p.lost_cost, 10 * 2.5 * 0.4);  // lost spot work at the spot multiplier
  EXPECT_LT(p.tiers[0].gpu_hours, 0);              // not reported per tier
  // A simulator that reports GPU-hours per tier gets them priced per tier.
  EXPECT_DOUBLE_EQ(r->policies[1].tiers[0].cost, 16 * 2.5 * 0.4);
  // Unknown model: the default price.
  auto d = PriceSimReport(SimReport(), Prices(), "");
  ASSERT_TRUE(d.ok());
  EXPECT_DOUBLE_EQ(d->policies[0].allocated_cost, 80 * 2.0);

  const std::string table = RenderSimCostTable(*r);
  EXPECT_NE(table.find("every GPU priced as H100 at 2.50 USD/GPU-hour"), std::string::npos) << table;
  EXPECT_NE(table.find("phalanx                 80.0  200.00            40.0     100.00                  2.0            5.00"
                       "            10.0      10.00"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("phalanx  spot              -      -            10.0      10.00"), std::string::npos) << table;
  EXPECT_NE(table.find("future                  16.0   40.00               -          -"), std::string::npos) << table;
  Json j = RenderSimCostJson(*r);
  EXPECT_DOUBLE_EQ(j["policies"][0]["lostCost"].get<double>(), 10);
  EXPECT_DOUBLE_EQ(j["policies"][1]["tiers"][0]["cost"].get<double>(), 16);
}

TEST(SimCostTest, BadReportsAreNamed) {
  Json r = SimReport();
  r["policies"][0]["tiers"][1]["lostGpuHours"] = "ten";
  auto bad = PriceSimReport(r, Prices(), "");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "policies[0].tiers[1].lostGpuHours: expected number, got string");
  r = SimReport();
  r["policies"][1].erase("makespanSeconds");
  EXPECT_EQ(PriceSimReport(r, Prices(), "").status().message(), "policies[1].makespanSeconds: required field missing");
  EXPECT_FALSE(PriceSimReport(Json{{"jobs", 3}}, Prices(), "").ok());
  EXPECT_FALSE(PriceSimReport(Json::array(), Prices(), "").ok());
}

}  // namespace
}  // namespace phalanx::cli
