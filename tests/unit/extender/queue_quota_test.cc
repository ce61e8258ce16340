// Team queues beyond gated gangs (docs/user-guide.md §7 "Pods outside gangs and ungated
// gangs"): a queue-labelled single GPU pod is an implicit gang of one (ParsePod), and a gang
// planned at filter time (TryPlan: no gate) is held to its queue's quota like the engine
// holds gated ones, counting what filter planned since the last admission pass.
#include <atomic>
#include <chrono>
#include <deque>
#include <thread>

#include <gtest/gtest.h>

#include "core/json/json.h"
#include "extender/objects/k8s_objects.h"
#include "tests/unit/extender/test_cluster.h"

namespace phalanx::extender::testing {
namespace {

using json::Json;

// A Pod as the API serves it: `gpus` whole GPUs (or `mig` devices of 3g.40gb), optional
// labels.
Json PodJson(const std::string& name, int gpus, Json labels = Json::object(), int mig = 0) {
  Json limits = Json::object();
  if (gpus > 0) limits["nvidia.com/gpu"] = std::to_string(gpus);
  if (mig > 0) limits["nvidia.com/mig-3g.40gb"] = std::to_string(mig);
  if (gpus == 0 && mig == 0) limits["cpu"] = "2";
  return Json{{"metadata", {{"name", name}, {"namespace", "ml"}, {"uid", "uid-" + name}, {"labels", labels}}},
              {"spec", {{"containers", Json::array({{{"name", "main"}, {"resources", {{"limits", limits}}}}})}}}};
}

PodInfo Parsed(const Json& pod) {
  auto info = ParsePod(pod);
  EXPECT_TRUE(info.ok()) << info.status().message();
  return info.ok() ? *info : PodInfo{};
}

TEST(ImplicitGang, AQueueLabelledWholeGpuPodIsAGangOfOneNamedAfterThePod) {
  Json pod = PodJson("notebook-7f", 2, {{"phalanx.io/queue", "team-a"}});
  pod["metadata"]["annotations"] = {{"phalanx.io/gang-min-members", "4"}};  // one pod is one member
  const PodInfo p = Parsed(pod);
  EXPECT_TRUE(p.IsGangMember());
  EXPECT_TRUE(p.implicit_gang);
  EXPECT_EQ(p.gang, "pod:notebook-7f");
  EXPECT_EQ(p.Gang().str(), "ml/pod:notebook-7f");
  EXPECT_EQ(p.min_members, 1);
  EXPECT_EQ(p.labels.size(), 1u) << "no label is added: the implicit gang lives only in the extender";
}

TEST(ImplicitGang, CpuMigUnlabelledAndGangPodsAreNot) {
  EXPECT_FALSE(Parsed(PodJson("cpu", 0, {{"phalanx.io/queue", "team-a"}})).IsGangMember());
  EXPECT_FALSE(Parsed(PodJson("mig", 0, {{"phalanx.io/queue", "team-a"}}, 1)).IsGangMember());
  EXPECT_FALSE(Parsed(PodJson("both", 1, {{"phalanx.io/queue", "team-a"}}, 1)).IsGangMember());
  EXPECT_FALSE(Parsed(PodJson("plain", 8)).IsGangMember());
  EXPECT_FALSE(Parsed(PodJson("empty", 8, {{"phalanx.io/queue", ""}})).IsGangMember());
  const PodInfo member = Parsed(PodJson("llama-0", 8, {{"phalanx.io/queue", "team-a"}, {"phalanx.io/gang", "llama"}}));
  EXPECT_EQ(member.gang, "llama");
  EXPECT_FALSE(member.implicit_gang);
  const PodInfo alias = Parsed(PodJson("pg-0", 8, {{"phalanx.io/queue", "team-a"}, {"scheduling.x-k8s.io/pod-group", "pg"}}));
  EXPECT_EQ(alias.gang, "pg");
}

TEST(ImplicitGang, ItsNameCannotBeARealGangsLabelValue) {
  // A label value allows [A-Za-z0-9._-] only: the ':' keeps the two name spaces apart.
  const std::string name = ImplicitGangName("train");
  EXPECT_EQ(name, "pod:train");
  EXPECT_NE(name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"),
            std::string::npos);
  EXPECT_TRUE(FormsImplicitGang("", "team-a", 1, false));
  EXPECT_FALSE(FormsImplicitGang("llama", "team-a", 1, false));
  EXPECT_FALSE(FormsImplicitGang("", "team-a", 0, false));
  EXPECT_FALSE(FormsImplicitGang("", "team-a", 1, true));
  EXPECT_FALSE(FormsImplicitGang("", "", 1, false));
}

// --- quotas for gangs planned at filter time ------------------------------------------------

std::vector<std::string> ThreeDgx() { return {"dgx-0", "dgx-1", "dgx-2"}; }

// team-a and team-b, 8 H100 GPUs each in cohort lab, lending nothing (no borrowing room);
// `shared` (nothing) is the default. 24 GPUs in the cluster: the quota, not the GPUs, limits.
// `lending`: each lends its unused quota to the other.
QueueAssignment TwoTeams(bool lending = false) {
  QueueAssignment a;
  for (const char* team : {"team-a", "team-b"}) {
    scheduling::QueueSpec q;
    q.name = team;
    q.cohort = "lab";
    q.quotas.push_back({.pool = "H100", .nominal = 8000, .borrowing_limit = std::nullopt,
                        .lending_limit = lending ? std::nullopt : std::optional<scheduling::Milli>(0)});
    a.config.queues.push_back(q);
  }
  scheduling::QueueSpec shared;
  shared.name = "shared";
  a.config.queues.push_back(shared);
  a.config.default_queue = "shared";
  return a;
}

struct QuotaCluster {
  TestCluster c;
  const std::vector<std::string> nodes = ThreeDgx();  // filter's replies point into it
  explicit QuotaCluster(bool lending = false) {
    for (const auto& n : ThreeDgx()) EXPECT_TRUE(c.ext.OnNode(DgxNode(n)).ok());
    EXPECT_TRUE(c.ext.SetQueues(TwoTeams(lending)).ok());
  }
  // An ungated single pod naming `queue`: an implicit gang, planned at its filter.
  PodInfo SinglePod(const std::string& name, int gpus, const std::string& queue, bool gated = false) {
    PodInfo p = Parsed(PodJson(name, gpus, {{"phalanx.io/queue", queue}}));
    p.gated = gated;
    c.ext.OnPod(p);
    return p;
  }
  FilterResult Filter(const PodInfo& p) { return c.ext.Filter(Args(p, nodes)); }
};

std::string FirstReason(const FilterResult& r) {
  if (!r.unresolvable.empty()) return std::string(r.unresolvable[0].second.str());
  if (!r.failed.empty()) return std::string(r.failed[0].second.str());
  return "";
}

constexpr std::string_view kTeamAFull = "queue team-a is at 8/8 nominal GPUs of H100 and its cohort lab has none to lend";

TEST(FilterQuota, AnUngatedGangBeyondItsQueuesQuotaIsRefusedWithTheQueuesReason) {
  QuotaCluster q;
  const PodInfo a1 = q.SinglePod("a-1", 8, "team-a");
  ASSERT_EQ(q.Filter(a1).passed.size(), 1u) << FirstReason(q.Filter(a1));
  q.c.ext.Tick();  // the pass adopts a-1: the engine counts it in team-a

  const PodInfo a2 = q.SinglePod("a-2", 8, "team-a");
  const FilterResult refused = q.Filter(a2);
  EXPECT_TRUE(refused.passed.empty());
  EXPECT_TRUE(refused.failed.empty()) << "preemption cannot make quota room: it fits on the nodes";
  ASSERT_EQ(refused.unresolvable.size(), 3u);
  EXPECT_NE(FirstReason(refused).find(kTeamAFull), std::string::npos) << FirstReason(refused);
  const std::string why = q.c.ext.Explain("ml/a-2");
  EXPECT_NE(why.find(kTeamAFull), std::string::npos) << why;
  EXPECT_NE(why.find("; queue team-a: H100: 8/8"), std::string::npos) << why;
  EXPECT_EQ(q.c.ext.StateJson()["cluster"]["freeGpus"], 16) << "a refused gang reserves nothing";

  // Another team with room is admitted on the same nodes.
  const PodInfo b1 = q.SinglePod("b-1", 8, "team-b");
  EXPECT_EQ(q.Filter(b1).passed.size(), 1u) << FirstReason(q.Filter(b1));
  // The default queue has no quota in H100 at all.
  const PodInfo s1 = q.SinglePod("s-1", 1, "no-such-queue");
  EXPECT_NE(FirstReason(q.Filter(s1)).find("queue shared is at 0/0"), std::string::npos) << FirstReason(q.Filter(s1));
}

TEST(FilterQuota, TwoUngatedGangsPlannedInOnePassIntervalAreCountedTogether) {
  QuotaCluster q;
  // A real (labelled) ungated gang of 2 x 4 GPUs, then an implicit one: no pass between.
  std::vector<PodInfo> gang;
  for (int i = 0; i < 2; ++i) {
    PodInfo p = GangPod("pair", i, 4, 2);
    p.ns = "ml";
    p.gated = false;
    p.labels["phalanx.io/queue"] = "team-a";
    q.c.ext.OnPod(p);
    gang.push_back(p);
  }
  ASSERT_EQ(q.Filter(gang[0]).passed.size(), 1u) << FirstReason(q.Filter(gang[0]));
  const PodInfo a2 = q.SinglePod("a-2", 1, "team-a");
  const FilterResult refused = q.Filter(a2);
  EXPECT_TRUE(refused.passed.empty());
  EXPECT_NE(FirstReason(refused).find(kTeamAFull), std::string::npos) << FirstReason(refused);
  // Within team-a's 8 the two together would fit: one of 8 GPUs would not.
  const PodInfo b1 = q.SinglePod("b-1", 4, "team-b");
  const PodInfo b2 = q.SinglePod("b-2", 4, "team-b");
  EXPECT_EQ(q.Filter(b1).passed.size(), 1u) << FirstReason(q.Filter(b1));
  EXPECT_EQ(q.Filter(b2).passed.size(), 1u) << FirstReason(q.Filter(b2));
  const PodInfo b3 = q.SinglePod("b-3", 1, "team-b");
  EXPECT_NE(FirstReason(q.Filter(b3)).find("queue team-b is at 8/8"), std::string::npos) << FirstReason(q.Filter(b3));

  // After a pass the engine counts them itself: the answer stays the same.
  q.c.ext.Tick();
  EXPECT_NE(FirstReason(q.Filter(a2)).find(kTeamAFull), std::string::npos) << FirstReason(q.Filter(a2));
  // The gang's pods go away: its quota is free again once a pass has seen it (until then
  // the engine still counts it: filter errs on the side of the quota).
  for (const PodInfo& p : gang) q.c.ext.OnPodDeleted(p.uid);
  q.c.ext.Tick();
  EXPECT_EQ(q.Filter(a2).passed.size(), 1u) << FirstReason(q.Filter(a2));
}

// What another queue of the cohort planned since the last pass is no longer there to lend.
TEST(FilterQuota, AnotherQueuesGangsPlannedInOnePassIntervalAreNotLentOut) {
  QuotaCluster q(/*lending=*/true);
  const PodInfo b1 = q.SinglePod("b-1", 8, "team-b");
  const PodInfo a1 = q.SinglePod("a-1", 8, "team-a");
  ASSERT_EQ(q.Filter(b1).passed.size(), 1u) << FirstReason(q.Filter(b1));
  ASSERT_EQ(q.Filter(a1).passed.size(), 1u) << FirstReason(q.Filter(a1));
  // 8 GPUs are free, but team-b uses its quota: team-a has nothing to borrow.
  const PodInfo a2 = q.SinglePod("a-2", 8, "team-a");
  const std::string why = FirstReason(q.Filter(a2));
  EXPECT_NE(why.find("queue team-a is at 8/8 nominal GPUs of H100 and its cohort lab has none to lend"),
            std::string::npos) << why;
  // Lending works: with team-b's gang gone (and a pass seeing it), team-a borrows its 8.
  q.c.ext.OnPodDeleted(b1.uid);
  q.c.ext.Tick();
  EXPECT_EQ(q.Filter(a2).passed.size(), 1u) << FirstReason(q.Filter(a2));
}

TEST(FilterQuota, GatedImplicitGangsWaitInTheEngineWithinTheirQueuesQuota) {
  QuotaCluster q;
  const PodInfo a1 = q.SinglePod("a-1", 8, "team-a", /*gated=*/true);
  const PodInfo a2 = q.SinglePod("a-2", 8, "team-a", /*gated=*/true);
  const PodInfo b1 = q.SinglePod("b-1", 8, "team-b", /*gated=*/true);
  q.c.ext.Tick();
  q.c.ext.DrainForTest();
  std::set<std::string> ungated;
  for (const auto& call : q.c.writer.CallsOf("ungate")) ungated.insert(call.target);
  ASSERT_EQ(ungated.size(), 2u) << ::testing::PrintToString(ungated);
  EXPECT_EQ(ungated.count("ml/a-2"), 0u) << ::testing::PrintToString(ungated);
  const std::string why = q.c.ext.Explain("ml/a-2");
  EXPECT_NE(why.find("gang ml/pod:a-2"), std::string::npos) << why;
  EXPECT_NE(why.find("queue team-a is at 8/8 nominal GPUs of H100"), std::string::npos) << why;
}

// Filter reads the engine's queue ledger holding only the ledger lock (extender.h, the
// locking rule), while passes run, GpuQueues change and status is read. Whatever the
// interleaving, team-a never holds more than its 8 GPUs through filter. (A race shows as a
// crash or a broken count here, and as a report under -fsanitize=thread.)
TEST(FilterQuota, ConcurrentPassesQueueChangesAndFiltersNeverExceedTheQuota) {
  QuotaCluster q;
  std::atomic<bool> done{false};
  std::thread passes([&] {
    while (!done) {
      q.c.ext.Tick();
      q.c.clock.Advance(std::chrono::milliseconds(100));
    }
  });
  std::thread changes([&] {
    for (int i = 0; !done; ++i) {
      QueueAssignment a = TwoTeams();
      a.config.queues[1].weight = 1 + i % 2;  // a real change: the engine's queues are rebuilt
      EXPECT_TRUE(q.c.ext.SetQueues(std::move(a)).ok());
      (void)q.c.ext.QueueStatuses();
      (void)q.c.ext.Explain("ml/a-0");
      std::this_thread::yield();
    }
  });
  std::deque<PodInfo> running;  // team-a pods that passed filter and still exist
  int admitted = 0;
  // 400 filters, and more until quota freed by ended pods was given again: freeing takes a
  // pass, and on a loaded machine the passes thread may not run during the first 400 (once in
  // a full `make test`; generous bound, not a speed check).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (int i = 0; i < 400 || (admitted <= 8 && std::chrono::steady_clock::now() < deadline); ++i) {
    PodInfo p = q.SinglePod("a-" + std::to_string(i), 1, "team-a");
    if (const FilterResult r = q.Filter(p); !r.passed.empty()) {
      // Bound where filter put it, as the informer reports it (an unbound plan would expire).
      p.node_name = std::string(r.passed[0]);
      p.phase = PodPhase::kRunning;
      q.c.ext.OnPod(p);
      running.push_back(p);
      ++admitted;
    } else if (!running.empty()) {
      q.c.ext.OnPodDeleted(running.front().uid);  // one ends; a later pass frees its quota
      running.pop_front();
      q.c.ext.OnPodDeleted(p.uid);
    } else {
      std::this_thread::yield();  // nothing to end: let a pass free the quota
    }
    ASSERT_LE(running.size(), 8u) << "team-a went past its quota of 8 GPUs at pod " << i;
  }
  done = true;
  passes.join();
  changes.join();
  EXPECT_GT(admitted, 8) << "quota freed by ended pods was never given again";
}

TEST(FilterQuota, WithoutQueuesNothingIsRefused) {
  TestCluster c;
  for (const auto& n : ThreeDgx()) ASSERT_TRUE(c.ext.OnNode(DgxNode(n)).ok());
  for (const char* name : {"a-1", "a-2", "a-3"}) {
    PodInfo p = Parsed(PodJson(name, 8, {{"phalanx.io/queue", "team-a"}}));
    c.ext.OnPod(p);
    EXPECT_EQ(c.ext.Filter(Args(p, ThreeDgx())).passed.size(), 1u) << name;
  }
}

}  // namespace
}  // namespace phalanx::extender::testing
