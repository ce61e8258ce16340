// Team queues for work outside gated gangs (docs/user-guide.md §7 "Pods outside gangs and
// ungated gangs"), with the real phalanx-extender over the fake API server: two queues of 8
// H100 GPUs each in one cohort, lending nothing (no borrowing room), on 24 GPUs. Team A's
// single queue-labelled 8-GPU pods and ungated gangs beyond its quota are not bound, with the
// queue's reason in filter's reply and in `phalanx explain`; team B's are. The test plays
// kube-scheduler (filter, then bind on a passed node), as for pods created while the gang
// gate webhook was away.
#include <future>

#include "tests/integration/extender/apiserver_harness.h"

namespace phalanx::extender::itest {
namespace {

const std::vector<std::string> kNodes = {"dgx-1", "dgx-2", "dgx-3"};
constexpr std::string_view kTeamAFull = "queue team-a is at 8/8 nominal GPUs of H100 and its cohort lab has none to lend";

Json GpuQueueCrd() {
  return Json{{"apiVersion", "apiextensions.k8s.io/v1"},
              {"kind", "CustomResourceDefinition"},
              {"metadata", {{"name", "gpuqueues.phalanx.io"}}},
              {"spec",
               {{"group", "phalanx.io"},
                {"scope", "Cluster"},
                {"names", {{"plural", "gpuqueues"}, {"singular", "gpuqueue"}, {"kind", "GpuQueue"}, {"shortNames", {"gq"}}}},
                {"versions", Json::array({{{"name", "v1alpha1"},
                                           {"served", true},
                                           {"storage", true},
                                           {"subresources", {{"status", Json::object()}}}}})}}}};
}

Json GpuQueue(const std::string& name, int nominal, bool is_default = false) {
  Json spec = {{"cohort", "lab"},
               {"quotas", Json::array({{{"pool", "H100"}, {"nominal", nominal}, {"lendingLimit", 0}}})}};
  if (is_default) spec["default"] = true;
  return Json{{"apiVersion", "phalanx.io/v1alpha1"}, {"kind", "GpuQueue"}, {"metadata", {{"name", name}}}, {"spec", spec}};
}

struct QueueQuotaFixture : ::testing::Test {
  Cluster cluster;
  std::unique_ptr<ExtenderProcess> ext;

  void TearDown() override {
    if (HasFailure() && ext) std::cerr << "--- extender log ---\n" << ext->Log() << "\n";
  }
  void Start() {
    const std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    cluster.Start(name);
    for (const std::string& n : kNodes) cluster.Seed(DgxNode(n));
    cluster.Seed(GpuQueueCrd());
    cluster.Seed(GpuQueue("team-a", 8));
    cluster.Seed(GpuQueue("team-b", 8));
    cluster.Seed(GpuQueue("shared", 0, true));
    ext = std::make_unique<ExtenderProcess>(name, cluster.kubeconfig);
    ASSERT_TRUE(ext->WaitReady()) << ext->Log();
    // The queues are in force once /debug/state lists them.
    ASSERT_TRUE(WaitUntil([&] { return TeamQueue("team-b").is_object(); })) << ext->State().dump();
  }
  // A pod naming `queue`, created without the gate; a gang member when `gang` is set.
  Json SeedPod(const std::string& ns, const std::string& name, int gpus, const std::string& queue,
               const std::string& gang = "", int min_members = 0, bool gated = false) {
    Json pod = Pod({.ns = ns, .name = name, .gpus = gpus, .gang = gang, .min_members = min_members, .gated = gated});
    pod["metadata"]["labels"]["phalanx.io/queue"] = queue;
    return cluster.Seed(pod);
  }
  Json TeamQueue(const std::string& name) {
    const Json state = ext->State();
    if (!state.is_object() || !state.contains("teamQueues")) return Json();
    for (const Json& q : state["teamQueues"]) {
      if (q.value("name", "") == name) return q;
    }
    return Json();
  }
  std::string Explain(const std::string& pod) {
    return Http(ext->metrics_port(), "GET", "/debug/explain?pod=" + pod).body;
  }
  // kube-scheduler's turn for one pod: filter, then bind on the node that passed. "" when
  // bound, else why not (filter's reply or bind's error).
  std::string Schedule(const Json& pod) {
    const HttpReply reply = ext->Post("filter", FilterBody(pod, kNodes));
    const std::vector<std::string> passed = Passed(reply);
    if (passed.empty()) return "not scheduled: " + reply.body;
    const std::string error = BindError(ext->Post("bind", BindBody(pod, passed[0])));
    return error.empty() ? "" : "bind failed: " + error;
  }
  bool Bound(const std::string& ns, const std::string& name) { return IsBound(cluster.Get(ns, name)); }
};

TEST_F(QueueQuotaFixture, SingleQueueLabelledPodsBeyondTheirQueuesQuotaAreNotBound) {
  Start();
  const Json a1 = SeedPod("team-a", "a-1", 8, "team-a");
  const Json a2 = SeedPod("team-a", "a-2", 8, "team-a");
  const Json b1 = SeedPod("team-b", "b-1", 8, "team-b");
  // No pass in between needed: filter counts what it planned since the last one.
  ASSERT_EQ(Schedule(a1), "");
  const std::string refused = Schedule(a2);
  EXPECT_NE(refused.find(kTeamAFull), std::string::npos) << refused;
  ASSERT_EQ(Schedule(b1), "") << Explain("team-b/b-1");
  EXPECT_TRUE(Bound("team-a", "a-1"));
  EXPECT_TRUE(Bound("team-b", "b-1"));
  EXPECT_FALSE(Bound("team-a", "a-2"));
  // `phalanx explain` shows the implicit gang, its queue and why it waits.
  const std::string why = Explain("team-a/a-2");
  EXPECT_NE(why.find("gang team-a/pod:a-2"), std::string::npos) << why;
  EXPECT_NE(why.find(kTeamAFull), std::string::npos) << why;
  // A later attempt, after the extender's passes counted a-1 itself: still refused.
  ASSERT_TRUE(WaitUntil([&] { return TeamQueue("team-a")["pools"][0].value("usage", 0.0) == 8.0; }))
      << ext->State().dump();
  const std::string again = Schedule(a2);
  EXPECT_NE(again.find(kTeamAFull), std::string::npos) << again;
  EXPECT_FALSE(Bound("team-a", "a-2"));
  // a-1 ends: team-a has room again and a-2 is bound.
  ASSERT_TRUE(cluster.server->Delete("pods", "team-a", "a-1", {.grace_period_seconds = 0}).ok());
  ASSERT_TRUE(WaitUntil([&] { return Schedule(a2).empty(); })) << Explain("team-a/a-2");
  EXPECT_TRUE(Bound("team-a", "a-2"));
}

TEST_F(QueueQuotaFixture, UngatedGangsBeyondTheirQueuesQuotaAreNotBound) {
  Start();
  // team-a's ungated gang of 2 x 4 GPUs fills its quota; its next gang (8 x 1) is refused.
  std::vector<Json> first = {SeedPod("team-a", "ga-0", 4, "team-a", "ga", 2), SeedPod("team-a", "ga-1", 4, "team-a", "ga", 2)};
  std::vector<Json> second;
  for (int i = 0; i < 8; ++i) second.push_back(SeedPod("team-a", "gb-" + std::to_string(i), 1, "team-a", "gb", 8));
  std::vector<Json> other = {SeedPod("team-b", "gc-0", 4, "team-b", "gc", 2), SeedPod("team-b", "gc-1", 4, "team-b", "gc", 2)};
  // The extender counts a gang's members from its informer: wait until it has seen them all.
  for (const auto& [pod, members] : {std::pair{"team-a/ga-0", 2}, {"team-a/gb-0", 8}, {"team-b/gc-0", 2}}) {
    const std::string live = std::to_string(members) + " live member(s)";
    ASSERT_TRUE(WaitUntil([&] { return Explain(pod).find(live) != std::string::npos; })) << Explain(pod);
  }
  // Members of one gang bind together (the barrier): bind them concurrently.
  auto schedule_all = [&](const std::vector<Json>& pods) {
    std::vector<std::future<std::string>> runs;
    for (const Json& p : pods) runs.push_back(std::async(std::launch::async, [&, p] { return Schedule(p); }));
    std::vector<std::string> out;
    for (auto& r : runs) out.push_back(r.get());
    return out;
  };
  for (const std::string& r : schedule_all(first)) EXPECT_EQ(r, "");
  const std::string refused = Schedule(second[0]);
  EXPECT_NE(refused.find(kTeamAFull), std::string::npos) << refused;
  for (const std::string& r : schedule_all(other)) EXPECT_EQ(r, "") << Explain("team-b/gc-0");
  for (const Json& p : first) EXPECT_TRUE(Bound("team-a", p["metadata"]["name"]));
  for (const Json& p : other) EXPECT_TRUE(Bound("team-b", p["metadata"]["name"]));
  for (const Json& p : second) EXPECT_FALSE(Bound("team-a", p["metadata"]["name"]));
  const std::string why = Explain("team-a/gb-0");
  EXPECT_NE(why.find(kTeamAFull), std::string::npos) << why;
  EXPECT_EQ(ext->State()["cluster"]["freeGpus"], 8) << "the refused gang reserves nothing";
}

TEST_F(QueueQuotaFixture, GatedSingleQueueLabelledPodsAreAdmittedWithinTheirQueuesQuota) {
  Start();
  // As the webhook creates them: gated. The engine lifts the gates of those within quota.
  SeedPod("team-a", "a-1", 8, "team-a", "", 0, true);
  SeedPod("team-a", "a-2", 8, "team-a", "", 0, true);
  SeedPod("team-b", "b-1", 8, "team-b", "", 0, true);
  auto gated = [&](const std::string& ns, const std::string& name) { return HasGate(cluster.Get(ns, name)); };
  ASSERT_TRUE(WaitUntil([&] { return !gated("team-b", "b-1"); })) << Explain("team-b/b-1");
  ASSERT_TRUE(WaitUntil([&] { return gated("team-a", "a-1") != gated("team-a", "a-2"); }))
      << Explain("team-a/a-1") << "\n" << Explain("team-a/a-2");
  const std::string waiting = gated("team-a", "a-1") ? "team-a/a-1" : "team-a/a-2";
  ASSERT_TRUE(WaitUntil([&] { return Explain(waiting).find("queue team-a is at 8/8") != std::string::npos; }))
      << Explain(waiting);
  // It stays gated: no pass lets it through while the other holds team-a's quota.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_TRUE(gated("team-a", waiting.substr(7))) << Explain(waiting);
}

}  // namespace
}  // namespace phalanx::extender::itest
