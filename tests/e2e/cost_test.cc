// Issue 18 "Done when": a TrainingJob's status shows GPU-hours, idle GPU-hours and cost, and
// `phalanx report` shows the team (namespace) total — the real operator (with a price table),
// extender, device plugin and `phalanx` CLI against the fake API server. The test plays the device
// plugin's idle detection by writing phalanx.io/idle-since on one pod (its contract, docs/architecture.md §2.2).
#include <gtest/gtest.h>

#include <cstdio>
#include <numeric>

#include <fmt/format.h>

#include "core/json/json.h"
#include "tests/e2e/drivers/time_format.h"
#include "tests/e2e/harness/files.h"
#include "tests/e2e/scenario_helpers.h"
#include "tests/e2e/scenario_objects.h"

namespace phalanx::e2e {
namespace {

using kube::Json;
using kube::resources::kPods;
using kube::resources::kTrainingJobs;

// H100 at 3.60/GPU-hour (0.001 per GPU-second), spot at half price.
constexpr const char* kPrices = R"({"currency": "USD",
  "gpuHourly": {"NVIDIA-H100-80GB-HBM3": 3.60}, "defaultGpuHourly": 100,
  "tierMultiplier": {"spot": 0.5}})";
constexpr double kSpotPerGpuSecond = 0.0005;

double Seconds(const std::string& from, const std::string& to) {
  return std::chrono::duration<double>(ParseRfc3339(to) - ParseRfc3339(from)).count();
}

const Json& Usage(const Json& job) {
  static const Json kNone = Json::object();
  if (!job.contains("status") || !job["status"].contains("usage")) return kNone;
  return job["status"]["usage"];
}

double Num(const Json& o, const char* key) { return o.contains(key) && o[key].is_number() ? o[key].get<double>() : 0; }

// Runs `phalanx report ARGS` and returns its stdout ("" when it failed).
std::string RunReport(const Cluster& cluster, const std::string& args) {
  const std::string cmd = BinaryPath("cli/phalanx") + " report --kubeconfig " + cluster.kubeconfig() + " " + args;
  return RunCommand(cmd);
}

TEST(E2eCost, TrainingJobStatusShowsGpuHoursIdleGpuHoursAndCostAndReportShowsTheTeamTotal) {
  TempDir scratch;
  const std::string prices = scratch.path() + "/prices.json";
  ASSERT_TRUE(WriteFile(prices, kPrices));
  auto cluster = StartCluster({.nodes = {{"node-a"}},
                               .extra_operator_args = {"--price-table", prices, "--usage-update-seconds", "10"}});
  ASSERT_TRUE(cluster);
  auto& client = cluster->client();
  JobShape shape{.name = "cost", .replicas = 2, .gpus_per_replica = 4, .priority_class = "phalanx-spot"};
  ASSERT_TRUE(client.Create(kTrainingJobs, cluster->ns(), TrainingJob(shape)).ok());
  const std::string selector = "phalanx.io/job-name=cost";
  std::vector<Json> pods;
  ASSERT_TRUE(PollUntil([&] {
    pods = ListPods(client, cluster->ns(), selector);
    return pods.size() == 2 && std::all_of(pods.begin(), pods.end(), [](const Json& p) { return Phase(p) == "Running"; });
  })) << Json(pods).dump() << cluster->Diagnostics();
  std::map<std::string, std::string> started;  // pod -> status.startTime
  for (const auto& p : pods) started[Name(p)] = Str(p, "status", "startTime");

  // The device plugin's verdict on rank 0: idle since its start (the whole window).
  const std::string idle_pod = "cost-a1-0";
  const std::string idle_since = started[idle_pod];
  ASSERT_TRUE(client
                  .Patch(kPods, cluster->ns(), idle_pod, kube::PatchType::kMerge,
                         Json{{"metadata", {{"annotations", {{"phalanx.io/idle-since", idle_since}}}}}})
                  .ok());
  // The idle period is written at once (no waiting for the periodic update), back-filled from
  // idle-since, and priced: H100 (the node's phalanx.io/gpu.product) x spot multiplier.
  Json job;
  ASSERT_TRUE(PollUntil([&] {
    job = GetOrNull(client, kTrainingJobs, cluster->ns(), "cost");
    return Usage(job).contains("idlePods") && Num(Usage(job), "gpuSeconds") > 0;
  })) << job.dump() << cluster->Diagnostics();
  {
    const Json& u = Usage(job);
    const std::string until = u.value("accountedUntil", "");
    EXPECT_EQ(u.value("currency", ""), "USD");
    EXPECT_EQ(u["idlePods"].value(idle_pod, ""), idle_since);
    EXPECT_DOUBLE_EQ(Num(u, "idleGpuSeconds"), 4 * Seconds(idle_since, until)) << u.dump();
    double held = 0;
    for (const auto& [name, start] : started) held += 4 * Seconds(std::max(start, u.value("since", "")), until);
    EXPECT_DOUBLE_EQ(Num(u, "gpuSeconds"), held) << u.dump();
    EXPECT_NEAR(Num(u, "cost"), held * kSpotPerGpuSecond, 1e-9) << u.dump();
    EXPECT_NEAR(Num(u, "idleCost"), Num(u, "idleGpuSeconds") * kSpotPerGpuSecond, 1e-9) << u.dump();
  }
  // The operator's metrics: idle GPUs now, by namespace and tier.
  EXPECT_TRUE(PollUntil([&] {
    return cluster->Metric("operator", "phalanx_trainingjob_idle_gpus{namespace=\"ml\",tier=\"spot\"}") == 4.0;
  })) << cluster->Metrics("operator");

  // Training goes on; the periodic update (10 s here) brings usage forward without any other change.
  const double before = Num(Usage(job), "gpuSeconds");
  ASSERT_TRUE(PollUntil([&] {
    job = GetOrNull(client, kTrainingJobs, cluster->ns(), "cost");
    return Num(Usage(job), "gpuSeconds") > before + 8 * 5;
  })) << job.dump();

  // Both ranks finish: the job Succeeds and its usage ends at the pods' finishedAt — exactly the
  // pods' held time, however many status writes (and re-reads) it took.
  for (const auto& [name, _] : started) ASSERT_TRUE(cluster->kubelet_driver("node-a").Finish(cluster->ns(), name, 0, "").ok());
  bool succeeded = false;
  job = WaitJobPhase(*cluster, "cost", "Succeeded", &succeeded);
  ASSERT_TRUE(succeeded) << job.dump() << cluster->Diagnostics();
  ASSERT_TRUE(PollUntil([&] {
    job = GetOrNull(client, kTrainingJobs, cluster->ns(), "cost");
    pods = ListPods(client, cluster->ns(), selector);
    return pods.size() == 2;
  }));
  double held = 0, idle = 0;
  const Json& u = Usage(job);
  for (const auto& p : pods) {
    const std::string finished = p["status"]["containerStatuses"][0]["state"]["terminated"].value("finishedAt", "");
    const double seconds = 4 * Seconds(std::max(started[Name(p)], u.value("since", "")), finished);
    held += seconds;
    if (Name(p) == idle_pod) idle += 4 * Seconds(idle_since, finished);
  }
  EXPECT_DOUBLE_EQ(Num(u, "gpuSeconds"), held) << u.dump();
  EXPECT_DOUBLE_EQ(Num(u, "idleGpuSeconds"), idle) << u.dump();
  EXPECT_NEAR(Num(u, "cost"), held * kSpotPerGpuSecond, 1e-9);
  RecordProperty("gpuSeconds", std::to_string(held));
  EXPECT_TRUE(PollUntil([&] {
    auto total = cluster->Metric("operator", "phalanx_trainingjob_gpu_seconds_total{namespace=\"ml\",tier=\"spot\"}");
    return total && std::abs(*total - held) < 1e-6;
  })) << cluster->Metrics("operator");

  // `phalanx report` against the API server: the job and the namespace (team) total.
  const std::string out = RunReport(*cluster, "--json");
  auto rep = json::Parse(out);
  ASSERT_TRUE(rep.ok()) << out;
  ASSERT_EQ((*rep)["namespaces"].size(), 1u) << out;
  const Json& team = (*rep)["namespaces"][0];
  EXPECT_EQ(team["namespace"], "ml");
  EXPECT_EQ(team["jobs"], 1);
  EXPECT_NEAR(team["gpuHours"].get<double>(), held / 3600, 1e-9);
  EXPECT_NEAR(team["idleGpuHours"].get<double>(), idle / 3600, 1e-9);
  EXPECT_NEAR(team["cost"].get<double>(), held * kSpotPerGpuSecond, 1e-9);
  EXPECT_EQ(team["currency"], "USD");
  const std::string table = RunReport(*cluster, "-n ml");
  EXPECT_NE(table.find("cost"), std::string::npos) << table;
  EXPECT_NE(table.find("TOTAL"), std::string::npos) << table;
  EXPECT_NE(table.find(fmt::format("{:.2f}", held * kSpotPerGpuSecond)), std::string::npos) << table;
}


// The same chain with nobody playing a part: the device plugin samples the fake NVML (every GPU
// of the node at 2 % SM), finds the TrainingJob's pod idle after its window, writes
// phalanx.io/idle-since; the operator counts the idle GPU-seconds from it and prices them, and
// `phalanx report` shows the team's idle GPU-hours.
TEST(E2eCost, IdleGpusTheDevicePluginFindsShowInTheJobStatusAndTheReport) {
  TempDir scratch;
  const std::string prices = scratch.path() + "/prices.json";
  ASSERT_TRUE(WriteFile(prices, kPrices));
  auto cluster = StartCluster({.nodes = {{.name = "node-a", .sm_percent = 2}},
                               .extra_operator_args = {"--price-table", prices, "--usage-update-seconds", "10"},
                               .extra_device_plugin_args = {"--utilisation-interval", "1", "--idle-window", "3"}});
  ASSERT_TRUE(cluster);
  auto& client = cluster->client();
  JobShape shape{.name = "quiet", .replicas = 1, .gpus_per_replica = 8, .priority_class = "phalanx-spot"};
  ASSERT_TRUE(client.Create(kTrainingJobs, cluster->ns(), TrainingJob(shape)).ok());
  const std::string selector = "phalanx.io/job-name=quiet";
  std::string idle_since;
  ASSERT_TRUE(PollUntil([&] {
    for (const auto& p : ListPods(client, cluster->ns(), selector)) {
      if (Phase(p) == "Running") idle_since = Annotation(p, "phalanx.io/idle-since");
    }
    return !idle_since.empty();
  })) << cluster->Diagnostics();
  Json job;
  ASSERT_TRUE(PollUntil([&] {
    job = GetOrNull(client, kTrainingJobs, cluster->ns(), "quiet");
    return Num(Usage(job), "idleGpuSeconds") > 0;
  })) << job.dump() << cluster->Diagnostics();
  const Json& u = Usage(job);
  EXPECT_EQ(u["idlePods"].value("quiet-a1-0", ""), idle_since) << u.dump();
  EXPECT_LE(Num(u, "idleGpuSeconds"), Num(u, "gpuSeconds")) << u.dump();
  EXPECT_NEAR(Num(u, "idleCost"), Num(u, "idleGpuSeconds") * kSpotPerGpuSecond, 1e-9) << u.dump();
  auto rep = json::Parse(RunReport(*cluster, "--json"));
  ASSERT_TRUE(rep.ok());
  ASSERT_EQ((*rep)["namespaces"].size(), 1u);
  EXPECT_GT((*rep)["namespaces"][0]["idleGpuHours"].get<double>(), 0) << rep->dump();
}

}  // namespace
}  // namespace phalanx::e2e
