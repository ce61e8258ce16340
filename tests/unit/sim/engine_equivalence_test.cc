// One engine, two drivers (issue 16): the same gangs arriving and finishing at the same
// times, replayed through the simulator's `phalanx` policy and through the extender's
// admission (gated pods, Tick), are admitted at the same instants on the same nodes.
// Both run the shipped tier rules with preemption off (the extender's evictions end when
// kubelet has stopped the pods, which the simulator's stop times only approximate), once
// without duration hints (every gang's expected run time is its tier's default), once
// with them (the simulator's exact run time; the extender's a TrainingJob's
// activeDeadlineSeconds set to the same), and with two team queues whose quotas, not the
// GPUs, hold gangs back (no cohort: nothing is lent, so nothing is reclaimed).
#include <map>
#include <queue>
#include <set>
#include <string>
#include <utility>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "sim/engine/simulator.h"
#include "sim/policy/policies.h"
#include "tests/unit/extender/test_cluster.h"
#include "tests/unit/sim/test_util.h"

namespace phalanx::sim {
namespace {

using namespace std::chrono_literals;

struct GangEvent {
  double submit;
  double duration;
  int members;
  int gpus;
  int priority;
};

struct Decision {
  double time;
  std::vector<std::string> nodes;  // per member, sorted
  bool operator==(const Decision&) const = default;
};

// 8 nodes of 8 GPUs in 4 racks of 2, one pool: gangs of every tier and size compete.
const std::vector<GangEvent>& Scenario() {
  static const std::vector<GangEvent> kGangs = {
      {0, 500, 4, 8, 1000},   {0, 300, 2, 8, 1000},    {10, 200, 1, 4, 100},   {20, 900, 2, 8, 10000},
      {30, 100, 4, 8, 1000},  {40, 50, 1, 8, 1000},    {50, 400, 2, 4, 100},   {60, 700, 8, 8, 10000},
      {70, 60, 1, 2, 1000},   {80, 120, 3, 8, 1000},   {90, 30, 2, 8, 1000000}, {100, 800, 1, 8, 100},
      {400, 100, 6, 8, 1000}, {410, 90, 2, 8, 10000},  {420, 10, 1, 1, 1000},  {900, 50, 4, 8, 1000}};
  return kGangs;
}

struct Variant {
  bool hints = false;
  bool queues = false;
};

// team-a: 64 GPUs of H100 (every even gang and the 64-GPU one), team-b: 32 GPUs (the rest).
scheduling::QueueConfig TwoQueues() {
  scheduling::QueueConfig c;
  for (auto [name, gpus] : {std::pair{"team-a", 64}, std::pair{"team-b", 32}}) {
    scheduling::QueueSpec q;
    q.name = name;
    q.quotas.push_back({.pool = "H100", .nominal = gpus * scheduling::kMilliGpu, .borrowing_limit = std::nullopt,
                        .lending_limit = std::nullopt});
    c.queues.push_back(q);
  }
  c.default_queue = "team-a";
  EXPECT_TRUE(c.Validate().ok()) << c.Validate();
  return c;
}
std::string QueueOf(int i) { return i % 2 == 0 || i == 7 ? "team-a" : "team-b"; }

PolicyOptions NoPreemption(Variant v) {
  PolicyOptions o;
  o.engine.preemption_searches_per_pass = 0;
  o.duration_hints = v.hints;
  if (v.queues) o.queues = TwoQueues();
  return o;
}

std::map<int, Decision> ThroughTheSimulator(Variant v) {
  std::vector<Job> jobs;
  for (const GangEvent& e : Scenario()) {
    Job j = testing::MakeJob(e.submit, e.duration, e.members, e.gpus, e.priority);
    if (v.queues) j.queue = QueueOf(static_cast<int>(jobs.size()));
    jobs.push_back(j);
  }
  const Workload w = testing::MakeWorkload(std::move(jobs));
  ClusterSpec cluster = testing::Cluster(8, 8, IntraNodeTopology::kNvSwitch, 2);
  auto policy = MakePolicy("phalanx", NoPreemption(v));
  EXPECT_TRUE(policy.ok());
  Simulator sim(w, *BuildClusterState(cluster), **policy);
  const PolicyReport report = sim.Run();
  EXPECT_EQ(report.completed, static_cast<int>(Scenario().size()));
  std::map<int, Decision> out;
  for (JobId id = 0; id < static_cast<JobId>(w.jobs.size()); ++id) {
    Decision d{sim.run(id).first_start, {}};
    for (const NodeName& n : sim.run(id).nodes) d.nodes.push_back(n.str());
    std::sort(d.nodes.begin(), d.nodes.end());
    out[std::stoi(w.jobs[static_cast<size_t>(id)].name.substr(3))] = d;  // "job<i>"
  }
  return out;
}

std::map<int, Decision> ThroughTheExtender(Variant v) {
  const bool hints = v.hints;
  extender::ExtenderConfig config = extender::DefaultConfig();
  config.plan_ttl = std::chrono::seconds(100000);  // plans here are never bound against
  extender::testing::TestCluster c(config);
  for (int i = 0; i < 8; ++i) {
    const std::string name = fmt::format("n-{}", i);
    EXPECT_TRUE(c.ext.OnNode(extender::testing::DgxNode(name, fmt::format("n-r{}", i / 2))).ok());
  }
  if (v.queues) {
    extender::QueueAssignment queues;
    queues.config = TwoQueues();
    EXPECT_TRUE(c.ext.SetQueues(queues).ok());
  }
  const auto start = c.clock.Now();
  // Events in time order: arrivals (index), finishes (index, computed when admitted).
  std::multimap<double, int> arrivals;
  for (size_t i = 0; i < Scenario().size(); ++i) arrivals.emplace(Scenario()[i].submit, static_cast<int>(i));
  std::multimap<double, int> finishes;
  std::map<int, Decision> out;
  std::set<int> waiting;
  auto gang_name = [](int i) { return fmt::format("g{}", i); };
  for (int guard = 0; guard < 1000 && (!arrivals.empty() || !finishes.empty()); ++guard) {
    double t = 1e18;
    if (!arrivals.empty()) t = std::min(t, arrivals.begin()->first);
    if (!finishes.empty()) t = std::min(t, finishes.begin()->first);
    c.clock.Advance(start + std::chrono::duration_cast<Duration>(std::chrono::duration<double>(t)) - c.clock.Now());
    while (!finishes.empty() && finishes.begin()->first == t) {
      const int i = finishes.begin()->second;
      finishes.erase(finishes.begin());
      for (int m = 0; m < Scenario()[static_cast<size_t>(i)].members; ++m) {
        c.ext.OnPodDeleted(PodUid(fmt::format("uid-{}-{}", gang_name(i), m)));
      }
    }
    while (!arrivals.empty() && arrivals.begin()->first == t) {
      const int i = arrivals.begin()->second;
      arrivals.erase(arrivals.begin());
      const GangEvent& e = Scenario()[static_cast<size_t>(i)];
      // A hint is the TrainingJob's deadline (its run time's upper bound): here the exact run time.
      if (hints) c.ext.OnTrainingJob({"default", "tj-" + gang_name(i), 0, 0, "", e.duration});
      for (int m = 0; m < e.members; ++m) {
        extender::PodInfo p = extender::testing::GangPod(gang_name(i), m, e.gpus, e.members, e.priority);
        if (e.members > 1) p.topology_level = "topology.kubernetes.io/rack";  // preferred, as the simulator
        if (hints) p.training_job = "tj-" + gang_name(i);
        if (v.queues) p.labels[std::string(extender::kQueueLabel)] = QueueOf(i);
        c.ext.OnPod(p);
      }
      waiting.insert(i);
    }
    c.ext.Tick();
    c.ext.ReadLedger([&](const extender::Ledger& ledger) {
      for (auto it = waiting.begin(); it != waiting.end();) {
        const extender::GangRecord* g = ledger.FindGang(GangKey("default/" + gang_name(*it)));
        if (g == nullptr || !g->plan) {
          ++it;
          continue;
        }
        Decision d{t, {}};
        for (const auto& m : g->plan->members) d.nodes.push_back(m.node.str());
        std::sort(d.nodes.begin(), d.nodes.end());
        out[*it] = d;
        finishes.emplace(t + Scenario()[static_cast<size_t>(*it)].duration, *it);
        it = waiting.erase(it);
      }
    });
  }
  EXPECT_TRUE(waiting.empty());
  return out;
}

// Same decisions from both drivers; returns how many gangs waited (the scenario must make
// gangs wait, or it compares nothing interesting).
int ExpectSameDecisions(Variant v) {
  const std::map<int, Decision> sim = ThroughTheSimulator(v);
  const std::map<int, Decision> ext = ThroughTheExtender(v);
  EXPECT_EQ(sim.size(), Scenario().size());
  EXPECT_EQ(ext.size(), Scenario().size());
  int waited = 0;
  for (const auto& [i, d] : sim) {
    if (!ext.contains(i)) continue;
    EXPECT_DOUBLE_EQ(d.time, ext.at(i).time) << "gang " << i;
    EXPECT_EQ(d.nodes, ext.at(i).nodes) << "gang " << i;
    waited += d.time > Scenario()[static_cast<size_t>(i)].submit ? 1 : 0;
  }
  return waited;
}

TEST(EngineEquivalenceTest, SimulatorAndExtenderAdmitTheSameGangsAtTheSameTimesOnTheSameNodes) {
  EXPECT_GE(ExpectSameDecisions({}), 5);
}

TEST(EngineEquivalenceTest, WithDurationHintsBothDriversStillDecideAlike) {
  EXPECT_GE(ExpectSameDecisions({.hints = true}), 5);
  // The hints change decisions (backfill of work that ends before a head's start), or this
  // variant would test nothing the first one does not.
  EXPECT_NE(ThroughTheSimulator({.hints = true}), ThroughTheSimulator({}));
}

TEST(EngineEquivalenceTest, WithTeamQueuesBothDriversStillDecideAlike) {
  EXPECT_GE(ExpectSameDecisions({.queues = true}), 5);
  EXPECT_GE(ExpectSameDecisions({.hints = true, .queues = true}), 5);
  // team-b's quota holds some of its gangs back where the GPUs alone would not.
  EXPECT_NE(ThroughTheSimulator({.queues = true}), ThroughTheSimulator({}));
}

}  // namespace
}  // namespace phalanx::sim
