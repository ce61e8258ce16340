// --jobs-csv: one row per job per policy (PolicyReport::job_results, RenderJobsCsv), and
// that the rows agree with the report the table and JSON show.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "sim/engine/run.h"
#include "sim/report/writers.h"
#include "tests/unit/sim/test_util.h"

namespace phalanx::sim {
namespace {

using testing::MakeJob;
using testing::MakeWorkload;

constexpr const char* kHeader =
    "policy,job,name,tier,queue,pool,members,gpus_per_member,mig_profile,submit,queueing_seconds,first_start,finish,"
    "preemptions,lost_gpu_hours,first_node_group,outcome";

// RFC 4180 reader (quoted fields, doubled quotes), enough to read back what the writer wrote.
std::vector<std::vector<std::string>> ParseCsv(const std::string& text) {
  std::vector<std::vector<std::string>> rows(1);
  std::string field;
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      rows.back().push_back(std::move(field));
      field.clear();
    } else if (c == '\n') {
      rows.back().push_back(std::move(field));
      field.clear();
      rows.emplace_back();
    } else {
      field += c;
    }
  }
  if (rows.back().empty()) rows.pop_back();
  return rows;
}

// Rows as column name -> value, keyed by (policy, job id).
using Row = std::map<std::string, std::string>;
using RowMap = std::map<std::pair<std::string, int>, Row>;
RowMap Rows(const std::string& csv) {
  const auto table = ParseCsv(csv);
  RowMap out;
  for (size_t i = 1; i < table.size(); ++i) {
    EXPECT_EQ(table[i].size(), table[0].size()) << "row " << i;
    Row row;
    for (size_t c = 0; c < table[0].size() && c < table[i].size(); ++c) row[table[0][c]] = table[i][c];
    out[{row["policy"], std::stoi(row["job"])}] = row;
  }
  return out;
}

Row& Get(RowMap& rows, const std::string& policy, int job) { return rows[{policy, job}]; }

// Two node groups whose names hold dashes, like their nodes' ("rack-a-0"): the group comes
// from the cluster description, not from cutting the node name.
ClusterSpec TwoGroups() {
  ClusterSpec spec;
  spec.name = "two-groups";
  for (const char* name : {"rack-a", "rack-b"})
    spec.groups.push_back(NodeGroup{.name = name, .count = 2, .gpu_model = "H100", .gpus_per_node = 8});
  return spec;
}

// policy_test's PhalanxPreemptsTheCheapestWholeLowerTierGangGracefully: spot gang X, spot Y
// and standard Z fill four nodes at t=0; high H (pool H100, named with a comma and quotes)
// arrives at 5050: phalanx has X checkpoint and stop (one preemption, nothing lost) and
// starts H at 5110; gang-binpack never preempts, H waits for the first end (10000). N
// (5 x 8 GPUs) never fits four 8-GPU nodes.
Workload PreemptionWorkload() {
  Workload w = MakeWorkload({MakeJob(0, 10000, 2, 8, kSpotPriority, 100), MakeJob(0, 10000, 1, 8, kSpotPriority, 0),
                             MakeJob(0, 10000, 1, 8, kStandardPriority, 0), MakeJob(5050, 100, 1, 8, kHighPriority),
                             MakeJob(6000, 10, 5, 8)});
  w.jobs[3].name = "H, \"urgent\"";
  w.jobs[3].pool = "H100";
  w.jobs[3].queue = "team-a";
  return w;
}

SimulationReport Replay(const Workload& w, const ClusterSpec& cluster, const std::string& policies,
                        bool job_results = true) {
  RunOptions opts;
  opts.policies = *ParsePolicyList(policies);
  opts.sim.job_results = job_results;
  auto r = RunSimulation(cluster, w, opts);
  EXPECT_TRUE(r.ok()) << r.status();
  return *r;
}

TEST(JobsCsvTest, OneRowPerJobPerPolicyWithItsWaitPreemptionsAndOutcome) {
  const Workload w = PreemptionWorkload();
  const SimulationReport report = Replay(w, TwoGroups(), "phalanx,gang-binpack");
  const std::string csv = RenderJobsCsv(report.policies);
  ASSERT_EQ(csv.substr(0, csv.find('\n')), kHeader);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1 + 2 * 5);
  auto rows = Rows(csv);
  ASSERT_EQ(rows.size(), 10u);
  const int x = 0, h = 3, n = 4;

  EXPECT_EQ(Get(rows, "phalanx", x)["preemptions"], "1");
  EXPECT_EQ(Get(rows, "phalanx", x)["members"], "2");
  EXPECT_EQ(Get(rows, "phalanx", x)["tier"], "spot");
  EXPECT_EQ(Get(rows, "gang-binpack", x)["preemptions"], "0");
  EXPECT_EQ(Get(rows, "phalanx", h)["first_start"], "5110");
  EXPECT_EQ(Get(rows, "phalanx", h)["queueing_seconds"], "60");
  EXPECT_EQ(Get(rows, "gang-binpack", h)["first_start"], "10000");
  EXPECT_EQ(Get(rows, "gang-binpack", h)["finish"], "10100");
  EXPECT_EQ(Get(rows, "gang-binpack", h)["queueing_seconds"], "4950");
  EXPECT_EQ(Get(rows, "gang-binpack", h)["submit"], "5050");
  for (const char* policy : {"phalanx", "gang-binpack"}) {
    Row& hr = Get(rows, policy, h);
    EXPECT_EQ(hr["name"], "H, \"urgent\"") << policy;
    EXPECT_EQ(hr["pool"], "H100") << policy;
    EXPECT_EQ(hr["queue"], "team-a") << policy;
    EXPECT_EQ(hr["outcome"], "done") << policy;
    EXPECT_EQ(Get(rows, policy, x)["pool"], "") << policy;  // any pool
    Row& nr = Get(rows, policy, n);
    EXPECT_EQ(nr["outcome"], "never-fits") << policy;
    EXPECT_EQ(nr["first_start"], "") << policy;
    EXPECT_EQ(nr["finish"], "") << policy;
    EXPECT_EQ(nr["first_node_group"], "") << policy;
    // X, Y and Z's first members ran on three of the four nodes: both groups appear.
    std::set<std::string> groups;
    for (int id = 0; id < 4; ++id) groups.insert(Get(rows, policy, id)["first_node_group"]);
    EXPECT_EQ(groups, (std::set<std::string>{"rack-a", "rack-b"})) << policy;
  }
  // RFC 4180: the field is quoted and its quotes doubled.
  EXPECT_NE(csv.find(",\"H, \"\"urgent\"\"\","), std::string::npos) << csv;
}

TEST(JobsCsvTest, DoneRowsAverageToEachTiersQueueingDelay) {
  // Jobs of three tiers queueing on one 8-GPU node, under two policies.
  std::vector<Job> jobs;
  for (int i = 0; i < 24; ++i)
    jobs.push_back(MakeJob(i * 7.5, 40 + (i * 37) % 90, 1, 1 + (i * 5) % 8,
                           i % 3 == 0 ? kHighPriority : (i % 3 == 1 ? kStandardPriority : kSpotPriority), 30));
  const SimulationReport report = Replay(MakeWorkload(jobs), testing::Cluster(1, 8), "phalanx,gang-binpack");
  const auto rows = Rows(RenderJobsCsv(report.policies));
  int waited = 0;
  for (const PolicyReport& p : report.policies) {
    ASSERT_FALSE(p.tiers.empty());
    for (const TierReport& t : p.tiers) {
      double sum = 0;
      int count = 0;
      for (const auto& [key, row] : rows) {
        if (key.first != p.policy || row.at("tier") != t.tier || row.at("outcome") != "done") continue;
        sum += std::stod(row.at("queueing_seconds"));
        waited += std::stod(row.at("queueing_seconds")) > 0;
        ++count;
      }
      EXPECT_EQ(count, t.queueing_delay_s.count) << p.policy << " " << t.tier;
      ASSERT_GT(count, 0);
      EXPECT_NEAR(sum / count, t.queueing_delay_s.mean, 1e-9 * (1 + t.queueing_delay_s.mean)) << p.policy << " " << t.tier;
    }
  }
  EXPECT_GT(waited, 10);  // the check is about jobs that waited
}

TEST(JobsCsvTest, AGangStillWaitingAtTheEndIsUnfinishedAndCountsItsWaitUntilThen) {
  // policy_test's K8sDefaultCanDeadlockTwoGangs: gangs A (submitted at 1) and B (55) each
  // hold one node, waiting for the other forever; the replay ends at the last finish (60).
  Workload w = MakeWorkload({MakeJob(0, 50, 1, 4), MakeJob(0, 60, 1, 4), MakeJob(1, 100, 2, 8, kStandardPriority),
                             MakeJob(55, 100, 2, 8, kHighPriority)});
  auto rows = Rows(RenderJobsCsv(Replay(w, testing::Cluster(2, 8), "k8s-default").policies));
  EXPECT_EQ(Get(rows, "k8s-default", 2)["outcome"], "unfinished");
  EXPECT_EQ(Get(rows, "k8s-default", 2)["queueing_seconds"], "59");
  EXPECT_EQ(Get(rows, "k8s-default", 2)["first_start"], "");
  EXPECT_EQ(Get(rows, "k8s-default", 2)["first_node_group"], "");
  EXPECT_EQ(Get(rows, "k8s-default", 3)["outcome"], "unfinished");
  EXPECT_EQ(Get(rows, "k8s-default", 3)["queueing_seconds"], "5");
  EXPECT_EQ(Get(rows, "k8s-default", 0)["outcome"], "done");
  EXPECT_EQ(Get(rows, "k8s-default", 0)["first_node_group"], "n");
}

TEST(JobsCsvTest, AMigJobNamesTheGroupOfItsNode) {
  auto spec = ParseClusterSpec(R"(nodeGroups:
  - name: whole
    count: 1
    gpuModel: H100
    gpusPerNode: 8
  - name: mig-pool
    count: 1
    gpuModel: A100-SXM4-80GB
    gpusPerNode: 1
    mig:
      - {gpus: 1, layout: [3g.40gb, 3g.40gb]}
)",
                               "c.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  Job mig = MakeJob(0, 10, 1, 1);
  mig.mig_profile = "3g.40gb";
  auto rows = Rows(RenderJobsCsv(Replay(MakeWorkload({mig, MakeJob(0, 10, 1, 8)}), *spec, "phalanx").policies));
  EXPECT_EQ(Get(rows, "phalanx", 0)["mig_profile"], "3g.40gb");
  EXPECT_EQ(Get(rows, "phalanx", 0)["first_node_group"], "mig-pool");
  EXPECT_EQ(Get(rows, "phalanx", 1)["first_node_group"], "whole");
}

TEST(JobsCsvTest, RowsOnlyWhenAskedAndNeverInTheJsonReport) {
  const Workload w = PreemptionWorkload();
  SimulationReport with = Replay(w, TwoGroups(), "phalanx,gang-binpack");
  const SimulationReport without = Replay(w, TwoGroups(), "phalanx,gang-binpack", false);
  for (const PolicyReport& p : without.policies) EXPECT_TRUE(p.job_results.empty()) << p.policy;
  EXPECT_EQ(RenderJobsCsv(without.policies), std::string(kHeader) + "\n");
  ASSERT_EQ(with.policies[0].job_results.size(), w.jobs.size());
  EXPECT_EQ(RenderJson(with, false), RenderJson(without, false));
}

}  // namespace
}  // namespace phalanx::sim
