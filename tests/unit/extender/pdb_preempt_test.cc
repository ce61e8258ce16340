// PodDisruptionBudgets in preemption (issue 15 item 5): the victim set is checked whole, before
// anything is written, as the eviction API would judge it (extender/eviction/pod_disruption_budgets.h);
// and the GangEvictor never leaves a gang partly evicted when the API server refuses anyway.
#include <gtest/gtest.h>

#include "core/json/json.h"
#include "extender/eviction/gang_evictor.h"
#include "extender/eviction/pod_disruption_budgets.h"
#include "tests/unit/extender/test_cluster.h"

namespace phalanx::extender::testing {
namespace {

PdbInfo Budget(const std::string& name, const std::string& app, json::Json min_available) {
  auto b = ParsePdb({{"metadata", {{"name", name}, {"namespace", "default"}, {"generation", 1}}},
                     {"spec", {{"minAvailable", min_available}, {"selector", {{"matchLabels", {{"app", app}}}}}}}});
  EXPECT_TRUE(b.ok());
  return *b;
}

PodInfo Running(const std::string& name, const std::string& app, bool ready = true) {
  PodInfo p = GpuPod(name, 1, 0, "n");
  p.labels["app"] = app;
  p.ready = ready;
  return p;
}

TEST(CheckEvictionsTest, MinAvailableCountsEveryVictimOfTheSet) {
  PodInfo a = Running("a", "x"), b = Running("b", "x"), c = Running("c", "x");
  const std::vector<const PodInfo*> all{&a, &b, &c};
  // 3 healthy, 1 must stay: 2 may go together, not 3.
  EXPECT_EQ(CheckEvictions({Budget("pdb", "x", 1)}, {&a, &b}, all), "");
  const std::string why = CheckEvictions({Budget("pdb", "x", 1)}, {&a, &b, &c}, all);
  EXPECT_NE(why.find("default/pdb"), std::string::npos) << why;
  EXPECT_NE(why.find("allows 2"), std::string::npos) << why;
  // Another app's budget does not guard these pods.
  EXPECT_EQ(CheckEvictions({Budget("other", "y", 3)}, {&a, &b, &c}, all), "");
}

TEST(CheckEvictionsTest, PercentAndStatusAndStaleBudgets) {
  PodInfo a = Running("a", "x"), b = Running("b", "x");
  const std::vector<const PodInfo*> all{&a, &b};
  EXPECT_NE(CheckEvictions({Budget("pdb", "x", "100%")}, {&a}, all), "");
  EXPECT_EQ(CheckEvictions({Budget("pdb", "x", "50%")}, {&a}, all), "");
  // The disruption controller's status wins over our estimate.
  PdbInfo with_status = Budget("pdb", "x", 0);
  with_status.has_status = true;
  with_status.observed_generation = 1;
  with_status.disruptions_allowed = 0;
  EXPECT_NE(CheckEvictions({with_status}, {&a}, all), "");
  // A status older than the spec: the API server answers 429 "still being processed".
  PdbInfo stale = with_status;
  stale.generation = 2;
  stale.disruptions_allowed = 5;
  EXPECT_NE(CheckEvictions({stale}, {&a}, all).find("still being processed"), std::string::npos);
}

TEST(CheckEvictionsTest, PendingPodsIgnoreBudgetsAndTwoBudgetsRefuse) {
  PodInfo a = Running("a", "x");
  PodInfo pending = Running("p", "x");
  pending.phase = PodPhase::kPending;
  EXPECT_EQ(CheckEvictions({Budget("pdb", "x", 5)}, {&pending}, {&a, &pending}), "");
  const std::string why = CheckEvictions({Budget("one", "x", 0), Budget("two", "x", 0)}, {&a}, {&a});
  EXPECT_NE(why.find("more than one PodDisruptionBudget"), std::string::npos) << why;
}

TEST(CheckEvictionsTest, SelectorsFollowPolicyV1) {
  auto none = ParsePdb({{"metadata", {{"name", "n"}, {"namespace", "default"}}}, {"spec", {{"minAvailable", 9}}}});
  ASSERT_TRUE(none.ok());
  PodInfo a = Running("a", "x");
  EXPECT_FALSE(none->Selects(a));  // no selector selects nothing
  auto every = ParsePdb({{"metadata", {{"name", "e"}, {"namespace", "default"}}},
                         {"spec", {{"minAvailable", 9}, {"selector", json::Json::object()}}}});
  ASSERT_TRUE(every.ok());
  EXPECT_TRUE(every->Selects(a));
  auto expr = ParsePdb({{"metadata", {{"name", "x"}}},
                        {"spec", {{"selector", {{"matchExpressions", {{{"key", "app"}, {"operator", "NotIn"}, {"values", {"x"}}}}}}}}}});
  ASSERT_TRUE(expr.ok());
  EXPECT_FALSE(expr->Selects(a));
  EXPECT_FALSE(ParsePdb({{"metadata", json::Json::object()}}).ok());
}

struct StaticBudgets final : BudgetSource {
  std::vector<PdbInfo> budgets;
  std::vector<PdbInfo> BudgetsIn(std::string_view ns) const override {
    std::vector<PdbInfo> out;
    for (const auto& b : budgets) {
      if (b.ns == ns) out.push_back(b);
    }
    return out;
  }
};

// Gang "costly" (much work at risk) fills n0; gang "cheap" has a member on n1 and one on n2.
struct PdbPreemptFixture : ::testing::Test {
  TestCluster c;
  StaticBudgets budgets;
  RecordingEventSink events;
  void SetUp() override {
    c.ext.SetBudgetSource(&budgets);
    c.ext.SetEventSink(&events);
    for (const char* n : {"n0", "n1", "n2"}) ASSERT_TRUE(c.ext.OnNode(DgxNode(n)).ok());
    for (int i = 0; i < 2; ++i) {
      PodInfo p = GangPod("costly", i, 4, 2, 100);
      p.gated = false;
      p.node_name = "n0";
      p.phase = PodPhase::kRunning;
      p.ready = true;
      p.labels["app"] = "costly";
      p.training_job = "costly-job";
      c.ext.OnPod(p);
    }
    c.ext.OnTrainingJob({"default", "costly-job", 1e6, 0, ""});
    for (int i = 0; i < 2; ++i) {
      PodInfo p = GangPod("cheap", i, 8, 2, 100);
      p.gated = false;
      p.node_name = i == 0 ? "n1" : "n2";
      p.phase = PodPhase::kRunning;
      p.ready = true;
      p.labels["app"] = "cheap";
      p.training_job = "cheap-job";
      c.ext.OnPod(p);
    }
    c.ext.OnTrainingJob({"default", "cheap-job", 10, 0, ""});
    // As the daemon does every 100 ms: the engine adopts the running gangs (their expected
    // ends feed the price of preempting them).
    c.ext.Tick();
  }
  PreemptArgs Proposal() {
    PreemptArgs a;
    a.pod = GpuPod("hi", 8, 10000);
    a.victims["n0"] = {"uid-costly-0", "uid-costly-1"};
    a.victims["n1"] = {"uid-cheap-0"};
    return a;
  }
};

TEST_F(PdbPreemptFixture, WithoutBudgetsTheCheapGangGoes) {
  PreemptResult r = c.ext.Preempt(Proposal());
  ASSERT_TRUE(r.victims.contains("n1"));
  c.ext.DrainForTest();
  ASSERT_EQ(c.writer.CallsOf("evict").size(), 1u);
  EXPECT_EQ(c.writer.CallsOf("evict")[0].target, "default/cheap-1");
  EXPECT_EQ(events.WithReason("Preempting").size(), 1u);
  EXPECT_FALSE(events.WithReason("Preempted").empty());
}

TEST_F(PdbPreemptFixture, AGangWhoseBudgetRefusesIsNeverChosen) {
  budgets.budgets.push_back(Budget("cheap-pdb", "cheap", 1));  // only 1 of the 2 members may go
  c.ext.OnTrainingJob({"default", "costly-job", 100, 0, ""});   // cheap enough to pay for itself
  PreemptResult r = c.ext.Preempt(Proposal());
  ASSERT_EQ(r.victims.size(), 1u);
  EXPECT_TRUE(r.victims.contains("n0")) << "the other candidate, whose budget allows it";
  c.ext.DrainForTest();
  for (const auto& call : c.writer.calls()) EXPECT_NE(call.target.rfind("default/cheap", 0), 0u) << call.verb;
}

TEST_F(PdbPreemptFixture, EveryCandidateRefusedVetoesAndWritesNothing) {
  budgets.budgets.push_back(Budget("cheap-pdb", "cheap", 1));
  budgets.budgets.push_back(Budget("costly-pdb", "costly", "100%"));
  PreemptResult r = c.ext.Preempt(Proposal());
  EXPECT_TRUE(r.victims.empty());
  c.ext.DrainForTest();
  EXPECT_TRUE(c.writer.calls().empty());
  auto blocked = events.WithReason("PreemptionBlocked");
  ASSERT_EQ(blocked.size(), 1u);
  EXPECT_EQ(blocked[0].regarding.name, "hi");
  EXPECT_NE(blocked[0].note.find("PodDisruptionBudget"), std::string::npos) << blocked[0].note;
}

// A writer whose evictions of chosen pods are refused with the API server's 429.
struct RefusingWriter final : ClusterWriter {
  RecordingWriter rec;
  std::map<std::string, int> refuse;  // pod key -> refusals left (-1 = always)
  std::mutex mu;
  Status PatchPodDevices(const PodRef& p, const std::string& d) override { return rec.PatchPodDevices(p, d); }
  Status BindPod(const PodRef& p, const std::string& n) override { return rec.BindPod(p, n); }
  Status LiftGangGate(const PodRef& p) override { return rec.LiftGangGate(p); }
  Status EvictPod(const PodRef& p, const std::string& r) override {
    {
      std::lock_guard lock(mu);
      auto it = refuse.find(p.Key());
      if (it != refuse.end() && it->second != 0) {
        if (it->second > 0) it->second--;
        return UnavailableError(
            "TooManyRequests (HTTP 429): Cannot evict pod as it would violate the pod's disruption budget.");
      }
    }
    return rec.EvictPod(p, r);
  }
  Status DeletePod(const PodRef& p, const std::string& r) override { return rec.DeletePod(p, r); }
  Status RequestGracefulPreemption(const std::string& ns, const std::string& j, const std::string& b) override {
    return rec.RequestGracefulPreemption(ns, j, b);
  }
};

EvictionJob Job(bool others_disrupted) {
  EvictionJob job;
  job.group = "default/g";
  job.preemptor = "default/hi";
  job.pods = {{"default", "g-0", "u0"}, {"default", "g-1", "u1"}, {"default", "g-2", "u2"}};
  job.others_disrupted = others_disrupted;
  return job;
}

struct EvictorFixture : ::testing::Test {
  RefusingWriter writer;
  std::vector<EvictionReport> reports;
  std::mutex mu;
  GangEvictor evictor{writer, {.deadline = std::chrono::milliseconds(300),
                               .initial_backoff = std::chrono::milliseconds(10),
                               .max_backoff = std::chrono::milliseconds(40)}};
  void SetUp() override {
    evictor.SetReport([this](const EvictionReport& r) {
      std::lock_guard lock(mu);
      reports.push_back(r);
    });
  }
  EvictionReport Only() {
    evictor.Drain();
    std::lock_guard lock(mu);
    EXPECT_EQ(reports.size(), 1u);
    return reports.empty() ? EvictionReport{} : reports[0];
  }
};

TEST_F(EvictorFixture, FirstRefusalWithNothingGoneAbandonsTheWholeSet) {
  writer.refuse["default/g-0"] = -1;
  evictor.Submit(Job(false));
  EvictionReport r = Only();
  EXPECT_EQ(r.outcome, EvictionReport::Outcome::kRefused);
  EXPECT_TRUE(r.done.empty());
  EXPECT_TRUE(writer.rec.calls().empty()) << "nothing may change";
}

TEST_F(EvictorFixture, ATransientRefusalIsRetriedWithinTheDeadline) {
  writer.refuse["default/g-1"] = 2;
  evictor.Submit(Job(false));
  EvictionReport r = Only();
  EXPECT_EQ(r.outcome, EvictionReport::Outcome::kEvicted) << r.message;
  EXPECT_EQ(writer.rec.CallsOf("evict").size(), 3u);
  EXPECT_TRUE(writer.rec.CallsOf("delete").empty());
}

TEST_F(EvictorFixture, APartlyEvictedGangIsCompletedAfterTheDeadline) {
  writer.refuse["default/g-1"] = -1;
  evictor.Submit(Job(false));
  EvictionReport r = Only();
  EXPECT_EQ(r.outcome, EvictionReport::Outcome::kForced);
  ASSERT_EQ(writer.rec.CallsOf("evict").size(), 1u);
  EXPECT_EQ(writer.rec.CallsOf("evict")[0].target, "default/g-0");
  auto deleted = writer.rec.CallsOf("delete");
  ASSERT_EQ(deleted.size(), 2u) << "the rest of the gang goes, none is left running alone";
  EXPECT_EQ(deleted[0].target, "default/g-1");
  EXPECT_EQ(deleted[1].target, "default/g-2");
  EXPECT_EQ(r.done.size(), 3u);
}

TEST_F(EvictorFixture, MembersHandedToTheSchedulerCountAsGone) {
  writer.refuse["default/g-0"] = -1;  // refused first, but kube-scheduler already deletes a member
  evictor.Submit(Job(true));
  EvictionReport r = Only();
  EXPECT_EQ(r.outcome, EvictionReport::Outcome::kForced);
  EXPECT_EQ(writer.rec.CallsOf("delete").size(), 3u);
}

// The engine's own preemption (admission) meets a budget the ledger did not know: the
// evictor's first eviction is refused, nothing of the victim stops. The engine must count
// the victim running and preemptible again, and its preemptor must look again, not wait
// for a gang that is not leaving (issue 25).
TEST(EngineEvictionRefusedTest, TheVictimIsACandidateAgainAndThePreemptorLooksAgain) {
  phalanx::testing::FakeClock clock;
  RefusingWriter writer;
  StaticLeadership leadership(true);
  Extender ext(DefaultConfig(), clock, writer, leadership);
  ASSERT_TRUE(ext.OnNode(DgxNode("n0")).ok());
  for (int i = 0; i < 2; ++i) {  // a spot gang fills the node
    PodInfo p = GangPod("low", i, 4, 2, 100);
    p.gated = false;
    p.node_name = "n0";
    p.phase = PodPhase::kRunning;
    ext.OnPod(p);
  }
  ext.Tick();  // adopted by the engine as running
  writer.refuse["default/low-0"] = -1;
  for (int i = 0; i < 2; ++i) ext.OnPod(GangPod("hi", i, 4, 2, 10000));
  clock.Advance(std::chrono::seconds(2));
  ext.Tick();  // the high gang preempts the spot gang; the evictor is refused
  ext.DrainForTest();
  ASSERT_EQ(writer.rec.CallsOf("evict").size(), 0u);
  EXPECT_EQ(ext.stats().evictions, 0u);
  // Well within the preemptor's wait for an eviction (30 s + 60 s): it looks again and
  // finds the same gang (a candidate again, its refused preemption not on its record).
  clock.Advance(std::chrono::seconds(2));
  ext.Tick();
  ext.DrainForTest();
  EXPECT_EQ(ext.stats().preempt_accepted, 2u) << "the refused victim must be chosen again";
  writer.refuse.clear();  // the budget allows it now
  clock.Advance(std::chrono::seconds(2));
  ext.Tick();
  ext.DrainForTest();
  EXPECT_EQ(ext.stats().preempt_accepted, 3u);
  EXPECT_EQ(writer.rec.CallsOf("evict").size(), 2u) << "both members evicted at last";
}

}  // namespace
}  // namespace phalanx::extender::testing
