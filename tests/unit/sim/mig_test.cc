// MIG in the simulator: `mig:` layouts in the cluster description, the `mig_profile`
// CSV column, MIG jobs queued and placed by each policy, MIG usage in the report.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "sim/engine/run.h"
#include "sim/engine/simulator.h"
#include "sim/policy/policies.h"
#include "sim/trace/readers.h"
#include "tests/unit/sim/test_util.h"

namespace phalanx::sim {
namespace {

using testing::MakeJob;
using testing::MakeWorkload;

constexpr const char* kMigCluster = R"(name: mig
nodeGroups:
  - name: a100
    count: 2
    gpuModel: A100-SXM4-80GB
    gpusPerNode: 4
    mig:
      - {gpus: 1, layout: [1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb]}
      - {gpus: 1, layout: [3g.40gb, 3g.40gb]}
)";

Job MigJob(double submit, double duration, const std::string& profile, int devices = 1) {
  Job j = MakeJob(submit, duration, 1, devices);
  j.mig_profile = profile;
  return j;
}

TEST(MigClusterTest, LayoutsBecomeMigDevicesAndLeaveWholeGpuAccounting) {
  auto spec = ParseClusterSpec(kMigCluster, "mig.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->TotalGpus(), 8);
  EXPECT_EQ(spec->MigGpus(), 4);
  auto built = BuildSimCluster(*spec);
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  EXPECT_EQ(built->state.TotalGpus(), 4);  // GPUs 2-3 of each node stay whole
  const placement::MigNode* node = built->mig.Find(NodeName("a100-0"));
  ASSERT_NE(node, nullptr);
  EXPECT_EQ(node->Total("1g.10gb"), 7);
  EXPECT_EQ(node->Total("3g.40gb"), 2);
  EXPECT_EQ(built->mig.TotalCompute(), 2 * (7 + 6));
  EXPECT_TRUE(built->state.CheckInvariantsForTest().ok());
}

TEST(MigClusterTest, BadLayoutsNameTheLine) {
  auto bad = [](const std::string& mig) {
    return ParseClusterSpec("nodeGroups:\n  - name: a\n    count: 1\n    gpuModel: A100-SXM4-80GB\n    gpusPerNode: 2\n"
                            "    mig:\n" + mig,
                            "c.yaml")
        .status()
        .message();
  };
  EXPECT_EQ(bad("      - {gpus: 1, layout: [9g.99gb]}\n"),
            "c.yaml:7: nodeGroups[0].mig[0]: unknown MIG profile \"9g.99gb\" for \"A100-SXM4-80GB\"");
  EXPECT_EQ(bad("      - {gpus: 1, layout: [4g.40gb, 4g.40gb]}\n").substr(0, 34), "c.yaml:7: nodeGroups[0].mig[0]: la");
  EXPECT_EQ(bad("      - {gpus: 3, layout: [7g.80gb]}\n"),
            "c.yaml:7: nodeGroups[0].mig[0]: MIG layouts cover 3 GPUs, more than gpusPerNode 2");
  EXPECT_EQ(bad("      - {gpus: 1, layot: [7g.80gb]}\n"), "c.yaml:7: nodeGroups[0].mig[0]: unknown field \"layot\"");
  auto h = ParseClusterSpec("nodeGroups:\n  - {name: a, count: 1, gpuModel: H100, mig: [{gpus: 1, layout: [1g.10gb]}]}\n", "h.yaml");
  EXPECT_EQ(h.status().message(), "h.yaml:2: nodeGroups[0].mig[0]: no MIG profile table for product \"H100\"");
}

TEST(MigCsvTest, ProfileColumnIsOptionalAndChecked) {
  const auto dir = std::filesystem::temp_directory_path() / "phalanx-mig-csv-test";
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  };
  const std::string head = "submit_time,duration,replicas,gpus_per_replica,mig_profile\n";
  auto ok = ReadPhalanxCsv(write("ok.csv", head + "0,10,1,2,1g.10gb\n5,10,2,8,\n"));
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->jobs[0].mig_profile, "1g.10gb");
  EXPECT_EQ(ok->jobs[0].gpus_per_replica, 2);
  EXPECT_FALSE(ok->jobs[1].IsMig());
  const std::string bad_profile = write("bad1.csv", head + "0,10,1,1,banana\n");
  EXPECT_EQ(ReadPhalanxCsv(bad_profile).status().message(),
            bad_profile + ":2: mig_profile: \"banana\" is not a MIG profile (like 1g.10gb or 3g.40gb)");
  const std::string gang = write("bad2.csv", head + "0,10,2,1,1g.10gb\n");
  EXPECT_EQ(ReadPhalanxCsv(gang).status().message(),
            gang + ":2: mig_profile: a MIG job is one pod: needs replicas=1 (gpus_per_replica = MIG devices)");
  std::filesystem::remove_all(dir);
}

TEST(MigEngineTest, EveryPolicyRunsMigJobsOnTheirDevicesAndQueuesTheRest) {
  auto spec = ParseClusterSpec(kMigCluster, "mig.yaml");
  ASSERT_TRUE(spec.ok());
  // Four 3g.40gb jobs of 100 s at t=0 (the cluster has four such devices), a fifth at
  // t=1 waits until t=100; a job wanting three 3g devices on one node never fits; a
  // whole-GPU job runs beside them.
  Workload w = MakeWorkload({MigJob(0, 100, "3g.40gb"), MigJob(0, 100, "3g.40gb"), MigJob(0, 100, "3g.40gb"),
                             MigJob(0, 100, "3g.40gb"), MigJob(1, 100, "3g.40gb"), MigJob(2, 10, "3g.40gb", 3),
                             MakeJob(0, 50, 1, 2)});
  for (const std::string& name : PolicyNames()) {
    auto policy = MakePolicy(name);
    ASSERT_TRUE(policy.ok());
    auto built = BuildSimCluster(*spec);
    ASSERT_TRUE(built.ok());
    Simulator sim(w, std::move(built->state), std::move(built->mig), **policy);
    PolicyReport rep = sim.Run();
    EXPECT_EQ(rep.mig_jobs, 5) << name;
    EXPECT_EQ(rep.mig_completed, 5) << name;
    EXPECT_EQ(rep.completed, 6) << name;
    EXPECT_EQ(rep.never_fit, 1) << name;
    ASSERT_EQ(rep.never_fit_jobs.size(), 1u);
    EXPECT_EQ(rep.never_fit_jobs[0].reason, "needs 3 x nvidia.com/mig-3g.40gb; the most any node's MIG layout has is 2");
    JobId fifth = -1;
    for (const Job& j : w.jobs)
      if (j.name == "job4") fifth = j.id;
    EXPECT_DOUBLE_EQ(sim.run(fifth).first_start, 100) << name;
    EXPECT_EQ(rep.mig_peak_used_slices, 12) << name;
    EXPECT_EQ(rep.mig_compute_slices, 26) << name;
    EXPECT_EQ(sim.mig().UsedCompute(), 0) << name;  // everything released at the end
  }
}

TEST(MigPolicyTest, PhalanxPacksOntoTheBusierNodeAndK8sDefaultSpreads) {
  auto spec = ParseClusterSpec(kMigCluster, "mig.yaml");
  ASSERT_TRUE(spec.ok());
  Workload w = MakeWorkload({MigJob(0, 10, "1g.10gb")});
  for (const auto& [name, expected] : {std::pair{"phalanx", "a100-1"}, std::pair{"gang-binpack", "a100-1"},
                                       std::pair{"k8s-default", "a100-0"}, std::pair{"gang-fifo", "a100-0"}}) {
    auto built = BuildSimCluster(*spec);
    ASSERT_TRUE(built.ok());
    // Something already holds a 1g device on a100-1.
    ASSERT_TRUE(built->mig.Allocate(PodUid("background"), NodeName("a100-1"), {0}).ok());
    auto policy = MakePolicy(name);
    ASSERT_TRUE(policy.ok());
    Simulator sim(w, std::move(built->state), std::move(built->mig), **policy);
    auto placed = (*policy)->PlaceMig(sim, 0);
    ASSERT_TRUE(placed) << name;
    EXPECT_EQ(placed->node.str(), expected) << name;
    // The lowest free 1g device of that node (device 0 of a100-1 is the background's).
    EXPECT_EQ(placed->devices, std::vector<int>{placed->node.str() == "a100-1" ? 1 : 0}) << name;
  }
}

TEST(MigReportTest, TableShowsMigRowsOnlyWhenThereIsMig) {
  auto spec = ParseClusterSpec(kMigCluster, "mig.yaml");
  ASSERT_TRUE(spec.ok());
  Workload w = MakeWorkload({MigJob(0, 100, "1g.10gb", 2)});
  RunOptions opts;
  opts.policies = {"phalanx"};
  auto report = RunSimulation(*spec, w, opts);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->policies[0].mig_completed, 1);
  EXPECT_DOUBLE_EQ(report->policies[0].mig_allocation, 2.0 / 26);
}

}  // namespace
}  // namespace phalanx::sim
