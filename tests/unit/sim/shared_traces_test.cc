// Reads the full public traces in ../shared/traces (PHALANX_SHARED_DIR, or ../shared next
// to the source tree). Skipped, saying so, when they are absent.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "sim/engine/run.h"
#include "sim/trace/readers.h"
#include "tests/unit/sim/test_util.h"

namespace phalanx::sim {
namespace {

std::filesystem::path Traces() {
  if (const char* env = std::getenv("PHALANX_SHARED_DIR")) return std::filesystem::path(env) / "traces";
  return std::filesystem::path(testing::SourceDir()) / ".." / "shared" / "traces";
}

#define REQUIRE_TRACE(path)                                                                              \
  if (!std::filesystem::exists(path)) {                                                                  \
    GTEST_SKIP() << "shared trace " << (path) << " is absent (set PHALANX_SHARED_DIR to ../shared); skipped"; \
  }

TEST(SharedTracesTest, PhillyFullTraceReadsEveryJob) {
  const auto path = Traces() / "philly-pollux-derived/philly.csv";
  REQUIRE_TRACE(path);
  auto w = ReadPhillyCsv(path.string(), {.seed = 1});
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->jobs.size(), 82247u);
  int gangs = 0;
  for (const Job& j : w->jobs) gangs += j.replicas > 1;
  EXPECT_EQ(gangs, 7 + 199 + 7 + 67 + 6 + 3);  // num_gpus > 8 (README counts)
}

TEST(SharedTracesTest, OpenbDefaultPodListReadsGpuPods) {
  const auto path = Traces() / "alibaba-gpu-v2023-openb/openb_pod_list_default.csv";
  REQUIRE_TRACE(path);
  auto w = ReadOpenbPods(path.string());
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->jobs.size(), 8152u - 1088u);  // CPU-only pods skipped
  int shares = 0;
  for (const Job& j : w->jobs) shares += j.IsShare();
  EXPECT_EQ(shares, 3078);
}

TEST(SharedTracesTest, PhillySliceReplaysOnTheDemoCluster) {
  const auto path = Traces() / "philly-pollux-derived/philly.csv";
  REQUIRE_TRACE(path);
  auto w = ReadPhillyCsv(path.string(), {.seed = 1, .time_scale = 20, .max_jobs = 3000});
  ASSERT_TRUE(w.ok());
  auto cluster = LoadClusterSpec(testing::SourceDir() + "/sim/data/demo-cluster.yaml");
  ASSERT_TRUE(cluster.ok());
  RunOptions opts;
  opts.policies = {"phalanx", "gang-binpack"};
  auto r = RunSimulation(*cluster, *w, opts);
  ASSERT_TRUE(r.ok());
  for (const auto& p : r->policies) EXPECT_EQ(p.completed + p.never_fit, 3000) << p.policy;
}

}  // namespace
}  // namespace phalanx::sim
