// Report formats and determinism of whole replays.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "sim/engine/run.h"
#include "sim/report/writers.h"
#include "sim/trace/readers.h"
#include "sim/trace/synthetic.h"
#include "tests/unit/sim/test_util.h"

namespace phalanx::sim {
namespace {

using testing::Cluster;

SimulationReport Replay(const Workload& w, const ClusterSpec& cluster, const std::string& policies = "all") {
  RunOptions opts;
  opts.policies = *ParsePolicyList(policies);
  auto r = RunSimulation(cluster, w, opts);
  EXPECT_TRUE(r.ok()) << r.status();
  return *r;
}

Workload Synthetic(uint64_t seed) {
  return GenerateSynthetic({.jobs = 300, .seed = seed, .cluster_gpus = 64, .load = 1.2, .mean_duration_s = 1800,
                            .max_gang_members = 4});
}

TEST(ReportTest, JsonCarriesEveryPolicyAndTierDistribution) {
  SimulationReport r = Replay(Synthetic(1), Cluster(8, 8, IntraNodeTopology::kNvSwitch, 4));
  auto j = nlohmann::json::parse(RenderJson(r));
  ASSERT_EQ(j["policies"].size(), 4u);
  EXPECT_EQ(j["policies"][0]["policy"], "phalanx");
  EXPECT_EQ(j["cluster"]["gpus"], 64);
  EXPECT_EQ(j["trace"]["jobs"], 300);
  for (const auto& p : j["policies"]) {
    EXPECT_EQ(p["completed"].get<int>() + p["unfinished"].get<int>() + p["neverFit"].get<int>(), 300) << p["policy"];
    ASSERT_FALSE(p["tiers"].empty());
    const auto& q = p["tiers"][0]["queueingDelaySeconds"];
    EXPECT_LE(q["p50"].get<double>(), q["p95"].get<double>());
    EXPECT_LE(q["p95"].get<double>(), q["p99"].get<double>());
    EXPECT_GT(p["timeline"]["rows"].size(), 10u);
    EXPECT_TRUE(p.contains("eventsPerSecond"));
  }
  auto no_timing = nlohmann::json::parse(RenderJson(r, false));
  EXPECT_FALSE(no_timing["policies"][0].contains("wallSeconds"));
}

TEST(ReportTest, TableAndHtmlShowThePolicies) {
  SimulationReport r = Replay(Synthetic(2), Cluster(8, 8), "phalanx,k8s-default");
  const std::string table = RenderTable(r);
  EXPECT_NE(table.find("phalanx"), std::string::npos);
  EXPECT_NE(table.find("k8s-default"), std::string::npos);
  EXPECT_NE(table.find("queueing delay p50/p95"), std::string::npos);
  EXPECT_NE(table.find("partially placed gangs"), std::string::npos);
  const std::string html = RenderHtml(r);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("<polyline"), std::string::npos);
  // Self-contained: no scripts or external resources.
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org/2000/svg"));
  EXPECT_EQ(html.find("https://"), std::string::npos);
}

TEST(DeterminismTest, SameSeedSameReport) {
  const ClusterSpec cluster = Cluster(8, 8, IntraNodeTopology::kNvlinkPairs, 4);
  const std::string a = RenderJson(Replay(Synthetic(5), cluster), false);
  const std::string b = RenderJson(Replay(Synthetic(5), cluster), false);
  EXPECT_EQ(a, b);
  const std::string c = RenderJson(Replay(Synthetic(6), cluster), false);
  EXPECT_NE(a, c);
}

TEST(DeterminismTest, PhillySeedChangesTiersOnly) {
  const std::string path = testing::DataPath("philly-small.csv");
  auto a = ReadPhillyCsv(path, {.seed = 1});
  auto b = ReadPhillyCsv(path, {.seed = 1});
  ASSERT_TRUE(a.ok() && b.ok());
  for (size_t i = 0; i < a->jobs.size(); ++i) {
    EXPECT_EQ(a->jobs[i].priority, b->jobs[i].priority);
    EXPECT_EQ(a->jobs[i].checkpoint_interval, b->jobs[i].checkpoint_interval);
  }
  // Over many seeds the assignment varies.
  bool varied = false;
  for (uint64_t s = 2; s < 20 && !varied; ++s) {
    auto c = ReadPhillyCsv(path, {.seed = s});
    for (size_t i = 0; i < c->jobs.size(); ++i) varied |= c->jobs[i].priority != a->jobs[i].priority;
  }
  EXPECT_TRUE(varied);
}

TEST(RunTest, PolicyListExpandsAllAndRejectsUnknown) {
  auto all = ParsePolicyList("all");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 4u);
  auto bad = ParsePolicyList("phalanx,yarn");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("unknown policy \"yarn\""), std::string::npos);
}

}  // namespace
}  // namespace phalanx::sim
