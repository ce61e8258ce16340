// Team queues in the simulator: the cluster description's `queues:`, the trace's queue
// column mapped to them, the phalanx policy enforcing them (reclaim) and the report's
// per-queue usage, time below min(demand, nominal), fair share and Jain's index.
#include <cmath>

#include <gtest/gtest.h>

#include "sim/engine/queue_tracker.h"
#include "sim/engine/run.h"
#include "sim/report/writers.h"
#include "sim/trace/readers.h"
#include "tests/unit/sim/test_util.h"

namespace phalanx::sim {
namespace {

using testing::MakeJob;
using testing::MakeWorkload;

constexpr char kTwoTeams[] = R"(
name: two
nodeGroups:
  - {name: n, count: 2, gpuModel: H100, gpusPerNode: 8}
queues:
  - {name: team-a, cohort: lab, quotas: [{pool: H100, nominal: 8}]}
  - {name: team-b, cohort: lab, quotas: [{pool: H100, nominal: 8}]}
defaultQueue: team-a
)";

Job TeamJob(double submit, double duration, int replicas, const std::string& queue, double checkpoint = 0) {
  Job j = MakeJob(submit, duration, replicas, 8, kStandardPriority, checkpoint);
  j.queue = queue;
  return j;
}

TEST(SimQueuesTest, ClusterDescriptionDefinesQueues) {
  auto spec = ParseClusterSpec(kTwoTeams, "two.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_TRUE(spec->queues.enabled());
  EXPECT_EQ(spec->queues.queues[1].name, "team-b");
  EXPECT_EQ(spec->queues.queues[1].quotas[0].nominal, 8000);
  EXPECT_EQ(spec->queues.default_queue, "team-a");
}

TEST(SimQueuesTest, BadQueuesNameTheField) {
  std::string bad = kTwoTeams;
  bad.replace(bad.find("pool: H100, nominal: 8}]}\n  - {name: team-b"), 10, "pool: A100");
  auto spec = ParseClusterSpec(bad, "two.yaml");
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find("two.yaml: queues[0].quotas[0].pool: no node group has gpuModel \"A100\""),
            std::string::npos)
      << spec.status();
  auto orphan = ParseClusterSpec("nodeGroups: [{name: n, count: 1, gpuModel: H100}]\ndefaultQueue: x\n", "o.yaml");
  ASSERT_FALSE(orphan.ok());
  EXPECT_NE(orphan.status().message().find("defaultQueue needs queues"), std::string::npos) << orphan.status();
  auto weight = ParseClusterSpec(std::string(kTwoTeams) + "reclaimAfterSeconds: -1\n", "w.yaml");
  ASSERT_FALSE(weight.ok());
  EXPECT_NE(weight.status().message().find("reclaimAfterSeconds: must be"), std::string::npos) << weight.status();
}

TEST(SimQueuesTest, FairSharesWaterFillByWeightUpToDemand) {
  auto f = QueueTracker::FairShares({10, 300, 0}, {1, 1, 1}, 256);
  EXPECT_DOUBLE_EQ(f[0], 10);
  EXPECT_DOUBLE_EQ(f[1], 246);
  EXPECT_DOUBLE_EQ(f[2], 0);
  f = QueueTracker::FairShares({300, 300}, {1, 3}, 256);
  EXPECT_DOUBLE_EQ(f[0], 64);
  EXPECT_DOUBLE_EQ(f[1], 192);
  EXPECT_DOUBLE_EQ(QueueTracker::Jain({1, 1, 1}), 1);
  EXPECT_DOUBLE_EQ(QueueTracker::Jain({1, 0}), 0.5);
}

TEST(SimQueuesTest, WindowsCompareEachQueueWithItsFairShare) {
  const scheduling::QueueConfig c = ParseClusterSpec(kTwoTeams, "two.yaml")->queues;
  QueueTracker t(c, 16, 0);
  const int a = t.IndexOf("team-a"), b = t.IndexOf("team-b");
  ASSERT_EQ(t.IndexOf("nobody"), a);
  t.AddDemand(a, 16);
  t.AddDemand(b, 16);
  // First window: team-a runs 12, team-b 4 (fair: 8 each) -> 50 % off.
  t.AddRunning(a, 12);
  t.AddRunning(b, 4);
  t.Advance(0, QueueTracker::kWindow);
  // Second window: 8 and 8 -> fair.
  t.AddRunning(a, -4);
  t.AddRunning(b, 4);
  t.Advance(QueueTracker::kWindow, 2 * QueueTracker::kWindow);
  // Third window: team-b has no demand for its second half -> not counted.
  t.Advance(2 * QueueTracker::kWindow, 2.5 * QueueTracker::kWindow);
  t.AddDemand(b, -16);
  t.AddRunning(b, -8);
  t.Advance(2.5 * QueueTracker::kWindow, 3 * QueueTracker::kWindow);
  PolicyReport rep;
  rep.jobs = 10;
  t.FillReport(rep, 3 * QueueTracker::kWindow);
  EXPECT_EQ(rep.fairness.windows, 2);
  EXPECT_EQ(rep.fairness.windows_within_10pct, 1);
  EXPECT_DOUBLE_EQ(rep.fairness.worst_window_deviation, 0.5);
  ASSERT_EQ(rep.queues.size(), 2u);
  EXPECT_DOUBLE_EQ(rep.queues[b].worst_window_deviation, 0.5);
  ASSERT_EQ(rep.fairness.contended_windows.size(), 2u);
  EXPECT_DOUBLE_EQ(rep.fairness.contended_windows[1].start_hours, 6);
  ASSERT_EQ(rep.fairness.contended_windows[0].queues.size(), 2u);
  EXPECT_EQ(rep.fairness.contended_windows[0].queues[1].name, "team-b");
  EXPECT_DOUBLE_EQ(rep.fairness.contended_windows[0].queues[1].gpus, 4);
  EXPECT_DOUBLE_EQ(rep.fairness.contended_windows[0].queues[1].fair_share, 8);
  // team-b was below min(demand 16, nominal 8) = 8 for the first window only.
  EXPECT_DOUBLE_EQ(rep.queues[b].hours_below_entitlement, 6);
  EXPECT_DOUBLE_EQ(rep.queues[b].gpu_hours_below_entitlement, 4 * 6);
  // Jain over (12/8, 4/8) then (1, 1), time-weighted over 2.5 windows of contention.
  EXPECT_NEAR(rep.fairness.jain_index, (0.8 * 1 + 1 * 1.5) / 2.5, 1e-9);
}

// A window's fair share is the time average of the fair share at each instant. Here
// team-b wants 16 GPUs for half the window and 2 for the other half while team-a floods,
// and each team runs exactly its fair share at every instant (8/8, then 14/2): no
// deviation. Water-filling the window's mean demand instead (team-b: 9 -> fair 8, team-a
// 8) would call this perfect schedule 37.5 % unfair to team-b (mean 5 GPUs) and 37.5 %
// over for team-a (mean 11): the definition the two-team example was first measured with.
TEST(SimQueuesTest, WindowFairShareIsTheTimeAverageOfTheInstantaneousOne) {
  const scheduling::QueueConfig c = ParseClusterSpec(kTwoTeams, "two.yaml")->queues;
  QueueTracker t(c, 16, 0);
  const int a = t.IndexOf("team-a"), b = t.IndexOf("team-b");
  t.AddDemand(a, 32);
  t.AddDemand(b, 16);
  t.AddRunning(a, 8);
  t.AddRunning(b, 8);
  t.Advance(0, QueueTracker::kWindow / 2);
  t.AddDemand(b, -14);
  t.AddRunning(b, -6);
  t.AddRunning(a, 6);
  t.Advance(QueueTracker::kWindow / 2, QueueTracker::kWindow);
  PolicyReport rep;
  t.FillReport(rep, QueueTracker::kWindow);
  ASSERT_EQ(rep.fairness.windows, 1);
  EXPECT_EQ(rep.fairness.windows_within_10pct, 1);
  EXPECT_NEAR(rep.fairness.worst_window_deviation, 0, 1e-12);
  ASSERT_EQ(rep.fairness.contended_windows[0].queues.size(), 2u);
  EXPECT_DOUBLE_EQ(rep.fairness.contended_windows[0].queues[a].fair_share, 11);
  EXPECT_DOUBLE_EQ(rep.fairness.contended_windows[0].queues[b].fair_share, 5);
  EXPECT_NEAR(rep.fairness.jain_index, 1, 1e-12);

  // The same demand, team-b held at 2 GPUs throughout (team-a 14): 60 % below its fair
  // share of 5 while it wanted 16, and the window fails.
  QueueTracker starved(c, 16, 0);
  starved.AddDemand(a, 32);
  starved.AddDemand(b, 16);
  starved.AddRunning(a, 14);
  starved.AddRunning(b, 2);
  starved.Advance(0, QueueTracker::kWindow / 2);
  starved.AddDemand(b, -14);
  starved.Advance(QueueTracker::kWindow / 2, QueueTracker::kWindow);
  PolicyReport rep2;
  starved.FillReport(rep2, QueueTracker::kWindow);
  EXPECT_EQ(rep2.fairness.windows_within_10pct, 0);
  EXPECT_NEAR(rep2.queues[b].worst_window_deviation, 0.6, 1e-12);
}

// team-a floods both nodes first; team-b's gang arrives later and takes its node back.
Workload FloodThenBurst() {
  std::vector<Job> jobs;
  for (int i = 0; i < 6; ++i) jobs.push_back(TeamJob(i, 4 * 3600, 1, "team-a", 600));
  jobs.push_back(TeamJob(600, 3600, 1, "team-b"));
  jobs.push_back(TeamJob(700, 3600, 1, "nobody"));  // unknown: the default queue (team-a)
  return MakeWorkload(jobs);
}

TEST(SimQueuesTest, PhalanxReclaimsLentGpusAndReportsPerQueue) {
  auto spec = ParseClusterSpec(kTwoTeams, "two.yaml");
  ASSERT_TRUE(spec.ok());
  const Workload w = FloodThenBurst();
  RunOptions opts;
  opts.policies = {"phalanx", "gang-binpack"};
  auto report = RunSimulation(*spec, w, opts);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_NE(report->notes.back().find("1 of 8 jobs name no queue the cluster defines"), std::string::npos);
  const PolicyReport& phalanx = report->policies[0];
  const PolicyReport& binpack = report->policies[1];
  ASSERT_EQ(phalanx.queues.size(), 2u);
  EXPECT_EQ(phalanx.queues[0].name, "team-a");
  EXPECT_EQ(phalanx.queues[0].jobs, 7);
  EXPECT_EQ(phalanx.queues[1].jobs, 1);
  // phalanx: team-b's gang reclaims its node (one team-a gang, gracefully) within the
  // graceful notice; gang-binpack makes it wait for a team-a job to end (4 h).
  EXPECT_EQ(phalanx.fairness.reclaim_preemptions, 1);
  EXPECT_EQ(phalanx.queues[0].reclaimed, 1);
  EXPECT_EQ(binpack.fairness.reclaim_preemptions, 0);
  EXPECT_LT(phalanx.queues[1].hours_below_entitlement, 0.1);
  EXPECT_GT(binpack.queues[1].hours_below_entitlement, 3.5);
  // Samples carry usage per queue.
  bool seen_b = false;
  for (const Sample& s : phalanx.timeline) seen_b = seen_b || (s.queue_gpus.size() == 2 && s.queue_gpus[1] == 8);
  EXPECT_TRUE(seen_b);
  const std::string json = RenderJson(*report);
  EXPECT_NE(json.find("\"reclaimPreemptions\""), std::string::npos);
  EXPECT_NE(json.find("\"jainIndex\""), std::string::npos);
  EXPECT_NE(json.find("\"contendedWindows\""), std::string::npos);
  const std::string table = RenderTable(*report);
  EXPECT_NE(table.find("queue team-b (nominal 8 GPUs"), std::string::npos) << table;
  // The HTML plots, per policy, each queue's share (solid), demand (dashed) and nominal quota (dotted).
  const std::string html = RenderHtml(*report);
  const size_t chart = html.find("phalanx: share of GPUs by queue");
  ASSERT_NE(chart, std::string::npos);
  EXPECT_NE(html.find("gang-binpack: share of GPUs by queue"), std::string::npos);
  const std::string svg = html.substr(chart, html.find("</svg>", chart) - chart);
  auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t at = svg.find(what); at != std::string::npos; at = svg.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("<polyline"), 4u);               // share and demand of two queues
  EXPECT_EQ(count("stroke-dasharray='1 3'"), 2u);  // their nominal quotas
  EXPECT_NE(svg.find(">team-b</text>"), std::string::npos);
}

// A MIG job counts in its team queue in GPU-equivalents (a device's compute slices over 7,
// core/scheduling MigProfileMilli), and queue shares are of every GPU, MIG-mode ones included.
TEST(SimQueuesTest, MigJobsCountInTheirQueueInGpuEquivalents) {
  constexpr char kMigTeams[] = R"(
name: mig-teams
nodeGroups:
  - name: a100
    count: 2
    gpuModel: A100-SXM4-80GB
    gpusPerNode: 4
    mig:
      - {gpus: 2, layout: [3g.40gb, 3g.40gb]}
queues:
  - {name: team-a, cohort: lab, quotas: [{pool: A100-SXM4-80GB, nominal: 4}]}
  - {name: team-b, cohort: lab, quotas: [{pool: A100-SXM4-80GB, nominal: 4}]}
defaultQueue: team-a
)";
  auto spec = ParseClusterSpec(kMigTeams, "mig-teams.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  Job whole = MakeJob(0, 3600, 1, 2);
  whole.queue = "team-a";
  Job mig = MakeJob(0, 3600, 1, 3);  // three 3g.40gb devices: 3 x 0.428 GPU
  mig.mig_profile = "3g.40gb";
  mig.queue = "team-b";
  const Workload w = MakeWorkload({whole, mig});
  RunOptions opts;
  opts.policies = {"phalanx"};
  auto report = RunSimulation(*spec, w, opts);
  ASSERT_TRUE(report.ok()) << report.status();
  const PolicyReport& p = report->policies[0];
  ASSERT_EQ(p.mig_completed, 1);
  ASSERT_EQ(p.queues.size(), 2u);
  EXPECT_EQ(p.queues[1].jobs, 1);
  EXPECT_NEAR(p.queues[1].gpu_hours, 3 * 0.428, 1e-9);
  EXPECT_NEAR(p.queues[0].gpu_hours, 2, 1e-9);
  // 4 whole + 4 MIG-mode GPUs = 8; one hour of makespan.
  EXPECT_NEAR(p.queues[1].mean_share, 3 * 0.428 / 8, 1e-9);
  EXPECT_NEAR(p.queues[0].mean_share, 2.0 / 8, 1e-9);
  // It ran at once: never below min(demand, nominal).
  EXPECT_DOUBLE_EQ(p.queues[1].hours_below_entitlement, 0);
  bool seen = false;
  for (const Sample& s : p.timeline) seen = seen || (s.queue_gpus.size() == 2 && std::abs(s.queue_gpus[1] - 1.284) < 1e-9);
  EXPECT_TRUE(seen);
}

// The phalanx policy holds MIG jobs to their queue's quota of the node's pool (the engine's
// Engine::BookOutside, as the extender): team-a (1 GPU, no cohort) runs two 3g.40gb jobs
// (0.856) at once, the third waits for one to end; team-b's job is not held back by them;
// a whole-GPU job of team-a waits for the MIG jobs' quota too. Without queues all run at once.
TEST(SimQueuesTest, PhalanxHoldsMigJobsToTheQuota) {
  constexpr char kMigQuota[] = R"(
name: mig-quota
nodeGroups:
  - name: a100
    count: 2
    gpuModel: A100-SXM4-80GB
    gpusPerNode: 4
    mig:
      - {gpus: 2, layout: [3g.40gb, 3g.40gb]}
queues:
  - {name: team-a, quotas: [{pool: A100-SXM4-80GB, nominal: 1}]}
  - {name: team-b, quotas: [{pool: A100-SXM4-80GB, nominal: 1}]}
defaultQueue: team-a
)";
  auto spec = ParseClusterSpec(kMigQuota, "mig-quota.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  std::vector<Job> jobs;
  for (const char* queue : {"team-a", "team-a", "team-a", "team-b"}) {
    Job mig = MakeJob(0, 3600, 1, 1);
    mig.mig_profile = "3g.40gb";
    mig.queue = queue;
    jobs.push_back(mig);
  }
  Job whole = MakeJob(1, 600, 1, 1);  // 0.856 + 1 > 1: waits like the third MIG job
  whole.queue = "team-a";
  jobs.push_back(whole);
  const Workload w = MakeWorkload(jobs);
  RunOptions opts;
  opts.policies = {"phalanx"};
  auto report = RunSimulation(*spec, w, opts);
  ASSERT_TRUE(report.ok()) << report.status();
  const PolicyReport& p = report->policies[0];
  EXPECT_EQ(p.mig_completed, 4);
  EXPECT_EQ(p.completed, 5);
  double most_a = 0, most_b = 0;
  for (const Sample& s : p.timeline) {
    ASSERT_EQ(s.queue_gpus.size(), 2u);
    most_a = std::max(most_a, s.queue_gpus[0]);
    most_b = std::max(most_b, s.queue_gpus[1]);
  }
  EXPECT_LE(most_a, 1 + 1e-9);  // never 1.284 (three MIG jobs) nor 1.856 (two and the whole GPU)
  EXPECT_NEAR(most_b, 0.428, 1e-9);
  // At 3600 the two MIG jobs end; the whole GPU (600 s) and the third MIG job (3600 s) do not
  // fit the quota together: one after the other.
  EXPECT_NEAR(p.makespan_s, 7800, 1);

  spec->queues = {};  // --no-queues: everything at once
  auto free_run = RunSimulation(*spec, w, opts);
  ASSERT_TRUE(free_run.ok()) << free_run.status();
  EXPECT_NEAR(free_run->policies[0].makespan_s, 3600, 1);
}

// The bundled examples (sim/data), as `make demo` and bench/RESULTS.md replay them.
struct Example {
  PolicyReport queues, no_queues;
};
Example ReplayExample(const std::string& name) {
  Example out;
  auto spec = LoadClusterSpec(testing::SourceDir() + "/sim/data/" + name + "-cluster.yaml");
  EXPECT_TRUE(spec.ok()) << spec.status();
  auto w = ReadTrace(testing::SourceDir() + "/sim/data/" + name + "-mix.csv", "phalanx");
  EXPECT_TRUE(w.ok()) << w.status();
  if (!spec.ok() || !w.ok()) return out;
  RunOptions opts;
  opts.policies = {"phalanx"};
  auto with = RunSimulation(*spec, *w, opts);
  spec->queues = {};  // --no-queues
  auto without = RunSimulation(*spec, *w, opts);
  EXPECT_TRUE(with.ok() && without.ok());
  if (with.ok()) out.queues = with->policies[0];
  if (without.ok()) out.no_queues = without->policies[0];
  return out;
}

// Issue 17's simulator targets on the two-team example: every contended 6-hour window
// within 10 % of fair share, utilisation >= 98 % of the run without queues, reclaims <= 0.1
// per job. (bench/RESULTS.md, "Two teams", has the figures.)
TEST(SimQueuesTest, TwoTeamExampleMeetsTheTargets) {
  const Example e = ReplayExample("two-team");
  ASSERT_EQ(e.queues.completed, 607);
  ASSERT_EQ(e.queues.queues.size(), 2u);
  EXPECT_GE(e.queues.fairness.windows, 3);
  EXPECT_EQ(e.queues.fairness.windows_within_10pct, e.queues.fairness.windows)
      << "worst " << e.queues.fairness.worst_window_deviation;
  EXPECT_GE(e.queues.gpu_utilisation, 0.98 * e.no_queues.gpu_utilisation);
  EXPECT_LE(e.queues.fairness.reclaims_per_job, 0.1);
}

// The three-team example (generated apart, not tuned on): it replays, every queue is
// reported, and reclaims stay rare. Its utilisation and fairness miss the targets at the
// default settings (bench/RESULTS.md): not asserted as passing.
TEST(SimQueuesTest, ThreeTeamExampleReplays) {
  const Example e = ReplayExample("three-team");
  ASSERT_EQ(e.queues.completed, 2454);
  ASSERT_EQ(e.queues.queues.size(), 3u);
  EXPECT_EQ(e.queues.queues[2].name, "infra");
  EXPECT_GT(e.queues.fairness.windows, 10);
  EXPECT_LE(e.queues.fairness.reclaims_per_job, 0.1);
  EXPECT_GT(e.queues.fairness.jain_index, 0.9);
}

TEST(SimQueuesTest, WithoutQueuesTheReportHasNoQueueSection) {
  const Workload w = FloodThenBurst();
  RunOptions opts;
  opts.policies = {"phalanx"};
  auto report = RunSimulation(testing::Cluster(2, 8), w, opts);
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->policies[0].queues.empty());
  EXPECT_EQ(RenderJson(*report).find("\"queues\""), std::string::npos);
  EXPECT_EQ(RenderTable(*report).find("queue team"), std::string::npos);
}

}  // namespace
}  // namespace phalanx::sim
