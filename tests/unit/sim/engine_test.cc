// The event queue and the engine's bookkeeping, driven by a scripted policy.
#include <gtest/gtest.h>

#include <functional>

#include "sim/engine/event_queue.h"
#include "sim/engine/simulator.h"
#include "sim/policy/baseline_placement.h"
#include "tests/unit/sim/test_util.h"

namespace phalanx::sim {
namespace {

using testing::Cluster;
using testing::MakeJob;
using testing::MakeWorkload;

TEST(EventQueueTest, OrdersByTimeThenInsertion) {
  EventQueue q;
  q.Push(5, EventType::kFinish, 1);
  q.Push(1, EventType::kSubmit, 2);
  q.Push(5, EventType::kSubmit, 3);
  q.Push(1, EventType::kSubmit, 4);
  std::vector<JobId> order;
  while (!q.empty()) order.push_back(q.Pop().job);
  EXPECT_EQ(order, (std::vector<JobId>{2, 4, 1, 3}));
}

// Starts every queued job FIFO with first fit; `hook` runs after each pass.
class ScriptedPolicy : public Policy {
 public:
  std::function<void(Simulator&)> hook;
  std::vector<std::pair<double, JobId>> queued;
  std::string name() const override { return "scripted"; }
  void OnQueued(Simulator& sim, JobId id) override {
    queued.emplace_back(sim.now(), id);
    waiting_.push_back(id);
  }
  void Schedule(Simulator& sim) override {
    std::vector<JobId> still;
    for (JobId id : waiting_) {
      const Job& j = sim.job(id);
      auto placed = PlaceMembers(sim.state(), j.pool, j.replicas, j.gpus_per_replica, NodeOrder::kFirstFit);
      if (!placed || !sim.StartJob(id, *placed).ok()) still.push_back(id);
    }
    waiting_ = still;
    if (hook) hook(sim);
  }

 private:
  std::vector<JobId> waiting_;
};

placement::ClusterState State(const ClusterSpec& spec) { return *BuildClusterState(spec); }

TEST(SimulatorTest, JobRunsForItsDurationAndQueuesBehindABusyCluster) {
  // One 8-GPU node; job 0 (8 GPUs, 100 s) then job 1 (4 GPUs, 50 s) submitted at t=10:
  // job 1 waits until t=100, finishes at 150.
  Workload w = MakeWorkload({MakeJob(0, 100, 1, 8), MakeJob(10, 50, 1, 4)});
  ScriptedPolicy policy;
  Simulator sim(w, State(Cluster(1, 8)), policy);
  PolicyReport r = sim.Run();
  EXPECT_EQ(r.completed, 2);
  EXPECT_DOUBLE_EQ(sim.run(0).finish, 100);
  EXPECT_DOUBLE_EQ(sim.run(1).first_start, 100);
  EXPECT_DOUBLE_EQ(sim.run(1).finish, 150);
  EXPECT_DOUBLE_EQ(sim.run(1).queue_time, 90);
  EXPECT_DOUBLE_EQ(r.makespan_s, 150);
  // Busy GPU-seconds: 8*100 + 4*50 = 1000 over 8 GPUs x 150 s.
  EXPECT_NEAR(r.gpu_utilisation, 1000.0 / 1200.0, 1e-9);
  // submit x2, start x2, finish x2.
  EXPECT_EQ(r.events, 6u);
}

TEST(SimulatorTest, PreemptionLosesWorkSinceLastCheckpointAndRestarts) {
  // Job 0: 8 GPUs, 1000 s of work, checkpoint every 100 s. Preempted at t=250: the
  // checkpoint at 200 survives, 50 s x 8 GPUs = 400 GPU-s are lost; it re-queues after
  // the 30 s restart overhead (t=280) and needs 800 s more: finishes at 1080.
  Workload w = MakeWorkload({MakeJob(0, 1000, 1, 8, kSpotPriority, 100)});
  ScriptedPolicy policy;
  bool done = false;
  policy.hook = [&](Simulator& sim) {
    if (sim.now() == 0) sim.WakeAt(250);
    if (!done && sim.now() == 250) {
      EXPECT_DOUBLE_EQ(sim.GpuSecondsAtRisk(0), 400);
      ASSERT_TRUE(sim.Preempt(0).ok());
      done = true;
    }
  };
  Simulator sim(w, State(Cluster(1, 8)), policy, SimConfig{.restart_overhead_s = 30});
  PolicyReport r = sim.Run();
  EXPECT_EQ(r.preemptions, 1);
  EXPECT_NEAR(r.lost_gpu_hours, 400.0 / 3600, 1e-12);
  EXPECT_EQ(sim.run(0).attempt, 1);
  EXPECT_DOUBLE_EQ(sim.run(0).finish, 1080);
  // The re-queue happened at 280 (restart overhead), not at 250.
  ASSERT_EQ(policy.queued.size(), 2u);
  EXPECT_DOUBLE_EQ(policy.queued.back().first, 280);
  EXPECT_TRUE(sim.state().CheckInvariantsForTest().ok());
}

TEST(SimulatorTest, JobsLargerThanTheClusterAreReportedNotDropped) {
  Workload w = MakeWorkload({MakeJob(0, 10, 3, 8), MakeJob(0, 10, 1, 8)});
  ScriptedPolicy policy;
  Simulator sim(w, State(Cluster(2, 8)), policy);
  PolicyReport r = sim.Run();
  EXPECT_EQ(r.never_fit, 1);
  EXPECT_EQ(r.completed, 1);
  ASSERT_EQ(r.never_fit_jobs.size(), 1u);
  EXPECT_EQ(r.never_fit_jobs[0].line, 2);
  EXPECT_NE(r.never_fit_jobs[0].reason.find("3 x 8 GPUs"), std::string::npos) << r.never_fit_jobs[0].reason;
}

TEST(SimulatorTest, PercentilesUseNearestRank) {
  std::vector<double> v = {5, 1, 4, 2, 3, 6, 7, 8, 9, 10};
  Distribution d = Summarize(v);
  EXPECT_EQ(d.count, 10);
  EXPECT_DOUBLE_EQ(d.mean, 5.5);
  EXPECT_DOUBLE_EQ(d.p50, 5);
  EXPECT_DOUBLE_EQ(d.p95, 10);
  EXPECT_DOUBLE_EQ(d.max, 10);
}

}  // namespace
}  // namespace phalanx::sim
