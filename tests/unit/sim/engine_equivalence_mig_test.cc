// Engine equivalence with MIG (issue 25; the fixture: engine_equivalence.h). Neither driver
// places MIG work through the engine: the simulator queues MIG jobs apart and asks its
// policy (sim/policy/phalanx_policy.cc PhalanxPolicy::PlaceMig: core/placement's
// ChooseMigDevices best fit, the node with the best score); the extender leaves MIG pods to
// kube-scheduler (extender/mig/mig_filter.cc FilterMig and PrioritizeMig, the same best fit
// rounded to a 0..10 score among kube-scheduler's own; extender/mig/mig_devices.cc picks the
// devices at bind). What goes through the engine in both is the team queues' accounting:
// MIG holders count in their queue (Engine::BookOutside: the simulator's PlaceMig, the
// extender's BookMigHolders), so MIG usage holds whole-GPU gangs to their quota and
// whole-GPU usage holds MIG work back (PlaceMig's and FilterMig's quota checks). That is
// compared here: the same admissions of both kinds at the same instants. The MIG pods' nodes
// agree because the harness stands in for kube-scheduler with the highest score, ties to the
// first node in name order (what the simulator does among equal best fits); with other
// plugins' scores or kube-scheduler's random tie-break they need not.
#include <gtest/gtest.h>

#include "tests/unit/sim/engine_equivalence.h"

namespace phalanx::sim::equivalence {
namespace {

// team-a: 4 GPUs of the A100 pool, team-b: 8; no cohort. Two A100 nodes (6 whole GPUs and
// the MIG devices of two GPUs each).
scheduling::QueueConfig TwoQueues() {
  scheduling::QueueConfig c;
  for (auto [name, gpus] : {std::pair{"team-a", 4}, std::pair{"team-b", 8}}) {
    scheduling::QueueSpec q;
    q.name = name;
    q.quotas.push_back({.pool = kMigPool, .nominal = gpus * scheduling::kMilliGpu, .borrowing_limit = std::nullopt,
                        .lending_limit = std::nullopt});
    c.queues.push_back(q);
  }
  c.default_queue = "team-b";
  EXPECT_TRUE(c.Validate().ok()) << c.Validate();
  return c;
}

// A 3g.40gb device (0.428 GPU) of team-a keeps its 4-GPU gang (1) waiting until it ends at
// t=300 (with a second one and two 1g.10gb meanwhile, within the quota); team-b's whole
// gangs fill its 8 GPUs, so its 1g.10gb pod (5) waits for them to end at t=500.
const std::vector<GangEvent>& Scenario() {
  static const std::vector<GangEvent> kGangs = {
      {0, 300, 1, 1, 1000, "team-a", 0, "3g.40gb"}, {10, 200, 1, 4, 1000, "team-a"},
      {20, 100, 1, 1, 1000, "team-a", 0, "3g.40gb"}, {0, 500, 1, 6, 1000, "team-b"},
      {5, 500, 1, 2, 1000, "team-b"},                {30, 100, 1, 1, 1000, "team-b", 0, "1g.10gb"},
      {40, 50, 1, 2, 100, "team-a", 0, "1g.10gb"},
  };
  return kGangs;
}

TEST(EngineEquivalenceMigTest, MigHoldersCountInTheirQueuesAlikeInBothDrivers) {
  for (bool hints : {false, true}) {
    SCOPED_TRACE(hints ? "with duration hints" : "without duration hints");
    const Outcome o = ExpectSameOutcome(Scenario(), {.hints = hints, .queues = TwoQueues(), .nodes = 2, .mig = true});
    EXPECT_EQ(o.starts.at(1).at(0).time, 300);  // held back by team-a's MIG usage
    EXPECT_EQ(o.starts.at(5).at(0).time, 500);  // held back by team-b's whole GPUs
    EXPECT_EQ(o.starts.at(2).at(0).time, 20);   // within the quota
  }
  // Without the queues nothing waits for quota: the comparison above is not vacuous.
  const Outcome free = ThroughTheSimulator(Scenario(), {.nodes = 2, .mig = true});
  EXPECT_LT(free.starts.at(1).at(0).time, 300);
}

}  // namespace
}  // namespace phalanx::sim::equivalence
