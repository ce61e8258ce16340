// Trace readers on small verbatim copies (tests/data/sim/README.md) and the cluster
// description parser.
#include <gtest/gtest.h>

#include <fstream>

#include <fmt/format.h>

#include "sim/cluster/cluster_spec.h"
#include "sim/engine/run.h"
#include "sim/trace/readers.h"
#include "tests/unit/sim/test_util.h"

namespace phalanx::sim {
namespace {

using testing::DataPath;

std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(PhalanxCsvTest, ReadsColumnsByNameWithDefaults) {
  const std::string path = WriteTemp("ok.csv",
                                     "# comment\n"
                                     "duration,submit_time,replicas,gpus_per_replica,tier,checkpoint_interval,pool\n"
                                     "100,20,4,8,high,600,H100\n"
                                     "50,10,1,1,,,\n"
                                     "60,30,1,1,250,,\n");
  auto w = ReadPhalanxCsv(path);
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_EQ(w->jobs.size(), 3u);
  // Sorted by submit time.
  EXPECT_EQ(w->jobs[0].line, 4);
  EXPECT_EQ(w->jobs[0].priority, kStandardPriority);
  EXPECT_FALSE(w->jobs[0].pool.has_value());
  const Job& gang = w->jobs[1];
  EXPECT_EQ(gang.replicas, 4);
  EXPECT_EQ(gang.gpus_per_replica, 8);
  EXPECT_EQ(gang.priority, kHighPriority);
  EXPECT_EQ(gang.tier, "high");
  EXPECT_DOUBLE_EQ(gang.checkpoint_interval, 600);
  EXPECT_EQ(gang.pool, "H100");
  EXPECT_EQ(w->jobs[2].priority, 250);
  EXPECT_EQ(w->jobs[2].tier, "p250");
}

TEST(PhalanxCsvTest, NegativeDurationNamesTheLine) {
  auto w = ReadPhalanxCsv(DataPath("bad-trace.csv"));
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().message(), DataPath("bad-trace.csv") + ":3: duration: negative duration");
}

TEST(PhalanxCsvTest, MissingColumnIsNamed) {
  auto w = ReadPhalanxCsv(WriteTemp("nocol.csv", "submit_time,duration,replicas\n0,1,1\n"));
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("missing column \"gpus_per_replica\""), std::string::npos) << w.status();
}

TEST(PhalanxCsvTest, RejectsNonNumbersAndShareGangs) {
  auto bad = ReadPhalanxCsv(WriteTemp("nan.csv", "submit_time,duration,replicas,gpus_per_replica\n0,ten,1,1\n"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(":2: duration: not a number: \"ten\""), std::string::npos) << bad.status();
  auto share = ReadPhalanxCsv(
      WriteTemp("share.csv", "submit_time,duration,replicas,gpus_per_replica,gpu_milli\n0,1,2,1,500\n"));
  ASSERT_FALSE(share.ok());
  EXPECT_NE(share.status().message().find("needs replicas=1"), std::string::npos);
}

TEST(PhillyReaderTest, MapsLargeJobsToGangsOfEightAndSortsBySubmit) {
  auto w = ReadPhillyCsv(DataPath("philly-small.csv"), {.seed = 3});
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_EQ(w->jobs.size(), 6u);
  // Earliest first: the 32-GPU job of 2017-10-06 14:37:26 at t=0.
  const Job& first = w->jobs[0];
  EXPECT_DOUBLE_EQ(first.submit, 0);
  EXPECT_EQ(first.replicas, 4);
  EXPECT_EQ(first.gpus_per_replica, 8);
  EXPECT_EQ(first.queue, "2869ce");
  // 8 GPUs: one pod; next submit 2017-10-07 01:11:39 = 38053 s later (10:34:13).
  EXPECT_EQ(w->jobs[1].replicas, 1);
  EXPECT_EQ(w->jobs[1].gpus_per_replica, 8);
  EXPECT_DOUBLE_EQ(w->jobs[1].submit, 38053);
  // 12 GPUs: 2 x 6 (the last job, 2017-10-27).
  EXPECT_EQ(w->jobs[5].replicas, 2);
  EXPECT_EQ(w->jobs[5].gpus_per_replica, 6);
  for (const Job& j : w->jobs) {
    EXPECT_TRUE(j.priority == kHighPriority || j.priority == kStandardPriority || j.priority == kSpotPriority);
    EXPECT_TRUE(j.checkpoint_interval == 0 || j.checkpoint_interval == 1800);
  }
}

TEST(PhillyReaderTest, TimeScaleDividesGaps) {
  auto w = ReadPhillyCsv(DataPath("philly-small.csv"), {.seed = 3, .time_scale = 10});
  ASSERT_TRUE(w.ok());
  EXPECT_DOUBLE_EQ(w->jobs[1].submit, 3805.3);
}

// --time-scale applies to the Phalanx format too (it was read and ignored: a 2x replay of
// llm-mix.csv printed the 1x report).
TEST(PhalanxCsvTest, TimeScaleDividesGapsFromTheFirstSubmit) {
  const std::string path = WriteTemp("scaled.csv",
                                     "submit_time,duration,replicas,gpus_per_replica\n"
                                     "100,5,1,1\n"
                                     "160,5,1,1\n"
                                     "400,5,1,1\n");
  auto w = ReadPhalanxCsv(path, {.time_scale = 2});
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_EQ(w->jobs.size(), 3u);
  EXPECT_DOUBLE_EQ(w->jobs[0].submit, 100);
  EXPECT_DOUBLE_EQ(w->jobs[1].submit, 130);
  EXPECT_DOUBLE_EQ(w->jobs[2].submit, 250);
  EXPECT_DOUBLE_EQ(w->jobs[2].duration, 5);  // durations are not scaled
  ASSERT_FALSE(w->notes.empty());
  EXPECT_EQ(w->notes.back(), "phalanx: submit gaps divided by 2");
}

// Twice the offered load on the same cluster (a Phalanx-format trace at ~70 % load on 32
// GPUs, 140 % at --time-scale 2): the replay ends sooner after its first submit and jobs
// queue longer, under the engine and a baseline alike.
TEST(TimeScaleTest, DoubleLoadChangesMakespanAndQueueing) {
  std::string csv = "submit_time,duration,replicas,gpus_per_replica\n";
  for (int i = 0; i < 200; ++i) csv += fmt::format("{},{},1,{}\n", i * 1200, 3600 * (1 + i % 3), 1 << (i % 4));
  const std::string path = WriteTemp("load.csv", csv);
  auto replay = [&](double scale) {
    auto w = ReadTrace(path, "phalanx", {.time_scale = scale});
    EXPECT_TRUE(w.ok()) << w.status();
    RunOptions opts;
    opts.policies = {"phalanx", "gang-binpack"};
    auto r = RunSimulation(testing::Cluster(4, 8), *w, opts);
    EXPECT_TRUE(r.ok()) << r.status();
    return *r;
  };
  const SimulationReport once = replay(1);
  const SimulationReport twice = replay(2);
  ASSERT_EQ(once.policies.size(), 2u);
  ASSERT_EQ(twice.policies.size(), 2u);
  for (size_t p = 0; p < 2; ++p) {
    const PolicyReport& a = once.policies[p];
    const PolicyReport& b = twice.policies[p];
    EXPECT_EQ(a.completed, 200) << a.policy;
    EXPECT_EQ(b.completed, 200) << a.policy;
    EXPECT_LT(b.makespan_s, a.makespan_s * 0.9) << a.policy;
    EXPECT_GT(b.gpu_weighted_queueing_delay_s, a.gpu_weighted_queueing_delay_s + 600) << a.policy;
  }
}

TEST(OpenbReaderTest, SharesPoolsAndCpuOnlyPods) {
  auto w = ReadOpenbPods(DataPath("openb-small.csv"));
  ASSERT_TRUE(w.ok()) << w.status();
  // 8 rows, 2 CPU-only skipped.
  ASSERT_EQ(w->jobs.size(), 6u);
  EXPECT_NE(w->notes[0].find("2 CPU-only pods skipped"), std::string::npos) << w->notes[0];
  const Job* share = nullptr;
  const Job* eight = nullptr;
  const Job* t4 = nullptr;
  const Job* multi = nullptr;
  for (const Job& j : w->jobs) {
    if (j.name == "openb-pod-0001") share = &j;
    if (j.name == "openb-pod-0017") eight = &j;
    if (j.name == "openb-pod-0022") t4 = &j;
    if (j.name == "openb-pod-0021") multi = &j;
  }
  ASSERT_TRUE(share && eight && t4 && multi);
  EXPECT_EQ(share->milli, 460);
  EXPECT_TRUE(share->IsShare());
  EXPECT_EQ(eight->gpus_per_replica, 8);
  EXPECT_EQ(eight->milli, 1000);
  EXPECT_DOUBLE_EQ(eight->duration, 10769854 - 9437497);
  EXPECT_EQ(t4->pool, "T4");
  EXPECT_EQ(t4->priority, kSpotPriority);  // BE
  EXPECT_FALSE(multi->pool.has_value());   // several models: any pool
  EXPECT_EQ(multi->priority, kHighPriority);  // LS
}

TEST(ReadTraceTest, UnknownFormat) {
  auto w = ReadTrace(DataPath("bad-trace.csv"), "slurm");
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("phalanx | philly | openb"), std::string::npos);
}

TEST(ClusterSpecTest, BuildsNodesRacksAndPools) {
  auto spec = ParseClusterSpec(R"(name: two
nodeGroups:
  - name: h
    count: 4
    gpuModel: H100
    nodesPerRack: 2
    racksPerBlock: 2
    zone: z
  - name: p
    count: 3
    gpuModel: A6000
    gpusPerNode: 4
    topology: nvlink-pairs
)",
                               "two.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->TotalGpus(), 4 * 8 + 3 * 4);
  auto state = BuildClusterState(*spec);
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(state->NodeCount(), 7);
  EXPECT_EQ(state->PoolCount(), 2);
  EXPECT_EQ(state->DomainCount(kLevelRack), 2);
  EXPECT_EQ(state->node(*state->FindNode(NodeName("h-3"))).spec.domains[kLevelRack], "h-r1");
  EXPECT_EQ(state->node(*state->FindNode(NodeName("h-3"))).spec.domains[kLevelBlock], "h-b0");
  const auto& p0 = state->node(*state->FindNode(NodeName("p-0"))).spec;
  EXPECT_EQ(p0.pool, "A6000");
  EXPECT_EQ(p0.domains[kLevelRack], "");
  // NVLink pair (0,1) is faster than the PCIe hop (1,2).
  EXPECT_GT(p0.bandwidth->at(0, 1), p0.bandwidth->at(1, 2));
}

TEST(ClusterSpecTest, ErrorsNameTheLineAndField) {
  auto unknown = ParseClusterSpec("nodeGroups:\n  - name: a\n    count: 2\n    gpuModel: H100\n    gpus: 8\n", "c.yaml");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().message(), "c.yaml:5: nodeGroups[0]: unknown field \"gpus\"");
  auto topo = ParseClusterSpec("nodeGroups:\n  - name: a\n    count: 2\n    gpuModel: H100\n    topology: mesh\n", "c.yaml");
  ASSERT_FALSE(topo.ok());
  EXPECT_NE(topo.status().message().find("c.yaml:5: topology must be nvswitch | nvlink-pairs | pcie"), std::string::npos)
      << topo.status();
  auto count = ParseClusterSpec("nodeGroups:\n  - name: a\n    count: 0\n    gpuModel: H100\n", "c.yaml");
  ASSERT_FALSE(count.ok());
  EXPECT_NE(count.status().message().find("count must be in 1..100000"), std::string::npos);
  auto missing = ParseClusterSpec("nodeGroups:\n  - name: a\n    count: 1\n", "c.yaml");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("missing field \"gpuModel\""), std::string::npos);
}

TEST(ClusterSpecTest, BundledDemoClusterLoads) {
  auto spec = LoadClusterSpec(testing::SourceDir() + "/sim/data/demo-cluster.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->TotalNodes(), 64);
  EXPECT_EQ(spec->TotalGpus(), 512);
}

}  // namespace
}  // namespace phalanx::sim
