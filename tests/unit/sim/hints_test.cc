// Duration hints of the simulator (issue 25): exact, overestimated (--hint-noise) or none
// (activeDeadlineSeconds, else the tier default), and the overruns a replay reports.
#include <gtest/gtest.h>

#include "sim/engine/simulator.h"
#include "sim/policy/duration_hints.h"
#include "sim/policy/policies.h"
#include "tests/unit/sim/test_util.h"

namespace phalanx::sim {
namespace {

using testing::Cluster;
using testing::MakeJob;
using testing::MakeWorkload;

TEST(HintsTest, NoiseFlagIsValidatedWithAClearError) {
  for (const char* bad : {"", "3", "x,2", "1,y", "0.5,2", "3,1", "1,1000", "1,inf", "1,3,5"}) {
    auto parsed = ParseHintNoise(bad, 1);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_NE(parsed.status().message().find("--hint-noise"), std::string::npos) << parsed.status().message();
  }
  auto ok = ParseHintNoise("1,3", 7);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->mode, HintModel::Mode::kNoisy);
  EXPECT_DOUBLE_EQ(ok->lo, 1);
  EXPECT_DOUBLE_EQ(ok->hi, 3);
}

TEST(HintsTest, NoisyFactorsAreSeededPerJobAndSpanTheRange) {
  const HintModel a = *ParseHintNoise("1,3", 1);
  const HintModel b = *ParseHintNoise("1,3", 2);
  double lo = 10, hi = 0, sum = 0;
  int differs = 0;
  for (JobId id = 0; id < 2000; ++id) {
    const double f = a.FactorOf(id);
    EXPECT_EQ(f, a.FactorOf(id));  // the same job, the same factor (every attempt)
    lo = std::min(lo, f);
    hi = std::max(hi, f);
    sum += f;
    differs += f != b.FactorOf(id) ? 1 : 0;
  }
  EXPECT_GE(lo, 1);
  EXPECT_LT(hi, 3);
  EXPECT_LT(lo, 1.05);
  EXPECT_GT(hi, 2.95);
  EXPECT_NEAR(sum / 2000, 2, 0.1);  // uniform: mean (lo + hi) / 2
  EXPECT_GT(differs, 1990);         // another seed, other factors
}

TEST(HintsTest, EachModeSaysWhatAUserWould) {
  Job j = MakeJob(0, 1000, 1, 8);
  j.id = 4;
  HintModel exact;
  EXPECT_EQ(exact.HintFor(j, 400), 400);  // the work left after a preemption
  const HintModel noisy = *ParseHintNoise("2,2", 1);
  EXPECT_EQ(noisy.HintFor(j, 400), 800);
  HintModel none;
  none.mode = HintModel::Mode::kNone;
  EXPECT_EQ(none.HintFor(j, 400), std::nullopt);  // the engine's tier default
  j.active_deadline = 3000;                       // ran 600 s of it already
  EXPECT_EQ(none.HintFor(j, 400), 2400);
}

// One 8-GPU node, three jobs one after another. Exact or overestimated hints never
// overrun; without hints a 6-hour job outlives the standard default (4 h), and a 1-hour
// deadline as the only hint for 2-hour jobs is overrun by each.
TEST(HintsTest, ReplayCountsRunsPastTheirHint) {
  auto run = [](HintModel hints, double duration, double deadline) {
    std::vector<Job> jobs = {MakeJob(0, duration, 1, 8), MakeJob(1, duration, 1, 8), MakeJob(2, duration, 1, 8)};
    for (Job& j : jobs) j.active_deadline = deadline;
    Workload w = MakeWorkload(jobs);
    PolicyOptions o;
    o.hints = hints;
    auto policy = *MakePolicy("phalanx", o);
    Simulator sim(w, *BuildClusterState(Cluster(1, 8)), *policy);
    const PolicyReport r = sim.Run();
    EXPECT_EQ(r.completed, 3);
    return r.hint_overruns;
  };
  HintModel none;
  none.mode = HintModel::Mode::kNone;
  EXPECT_EQ(run(HintModel{}, 1000, 0), 0);
  EXPECT_EQ(run(*ParseHintNoise("1,3", 1), 1000, 0), 0);
  EXPECT_EQ(run(none, 7200 * 3, 0), 3);  // standard default 4 h < 6 h
  EXPECT_EQ(run(none, 7200, 3600), 3);   // the deadline as the hint, overrun
  EXPECT_EQ(run(none, 1000, 3600), 0);
}

}  // namespace
}  // namespace phalanx::sim
