// Team queues over the API (issue 17 targets): the real phalanx-extender watches GpuQueue
// objects on the fake API server. Two queues of 8 H100 GPUs each in one cohort; team A
// floods; team B's 8-GPU gang is admitted in the first pass when GPUs are free — ahead of
// A's older, higher-priority gang that would only borrow — or, when A's borrowed gang holds
// them, after that whole gang is reclaimed (pods/eviction), never by taking A's work inside
// A's nominal quota. A malformed GpuQueue is skipped with a Warning Event naming the field.
#include <fstream>
#include <sstream>

#include "tests/fakes/apiserver/patch.h"
#include "tests/integration/extender/apiserver_harness.h"

namespace phalanx::extender::itest {
namespace {

// The CRD Phalanx ships: the fake checks objects and the extender's status writes against its
// schema and rules (tests/fakes/apiserver/crd_schema.h).
Json GpuQueueCrd() {
  std::ifstream in(std::string(PHALANX_TEST_SOURCE_DIR) + "/manifests/crds/phalanx.io_gpuqueues.yaml");
  std::stringstream text;
  text << in.rdbuf();
  auto crd = fakes::apiserver::YamlToJson(text.str());
  EXPECT_TRUE(crd.ok()) << crd.status();
  return crd.ok() ? *crd : Json();
}

Json GpuQueue(const std::string& name, double nominal, Json extra = Json::object()) {
  Json spec = {{"cohort", "lab"}, {"quotas", Json::array({{{"pool", "H100"}, {"nominal", nominal}}})}};
  for (const auto& [k, v] : extra.items()) spec[k] = v;
  return Json{{"apiVersion", "phalanx.io/v1alpha1"}, {"kind", "GpuQueue"}, {"metadata", {{"name", name}}}, {"spec", spec}};
}

Json Namespace(const std::string& name, Json labels) {
  return Json{{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}, {"labels", labels}}}};
}

std::string AllGpus(const std::string& node) {
  std::string devices = R"({"main":[)";
  for (int g = 0; g < 8; ++g) devices += (g ? "," : "") + std::string("\"GPU-") + node + "-" + std::to_string(g) + "\"";
  return devices + "]}";
}

struct QueueFixture : ::testing::Test {
  Cluster cluster;
  std::unique_ptr<ExtenderProcess> ext;

  void TearDown() override {
    if (HasFailure() && ext) std::cerr << "--- extender log ---\n" << ext->Log() << "\n";
  }
  // team-a (namespace team-a selected by label) and team-b (pods labelled phalanx.io/queue),
  // 8 H100 GPUs each, one cohort; `shared` (nominal 0) is the default queue.
  void SeedQueues() {
    cluster.Start(::testing::UnitTest::GetInstance()->current_test_info()->name());
    for (const char* n : {"dgx-1", "dgx-2"}) cluster.Seed(DgxNode(n));
    cluster.Seed(GpuQueueCrd());
    cluster.Seed(Namespace("team-a", {{"phalanx.io/team", "a"}}));
    cluster.Seed(Namespace("team-b", Json::object()));
    cluster.Seed(GpuQueue("team-a", 8, {{"namespaceSelector", {{"matchLabels", {{"phalanx.io/team", "a"}}}}}}));
    cluster.Seed(GpuQueue("team-b", 8));
    cluster.Seed(GpuQueue("shared", 0, {{"default", true}}));
  }
  // A one-member gang of 8 GPUs, running on `node` or gated.
  void SeedGang(const std::string& ns, const std::string& name, int priority, const std::string& node = "",
                const std::string& queue = "", const std::string& job = "") {
    Json pod = Pod({.ns = ns, .name = name, .gpus = 8, .gang = name, .min_members = 1, .gated = node.empty(),
                    .priority = priority, .node = node, .devices = node.empty() ? "" : AllGpus(node), .training_job = job});
    if (!queue.empty()) pod["metadata"]["labels"]["phalanx.io/queue"] = queue;
    cluster.Seed(pod);
  }
  void StartExtender() {
    ext = std::make_unique<ExtenderProcess>(::testing::UnitTest::GetInstance()->current_test_info()->name(),
                                            cluster.kubeconfig, std::vector<std::string>{"--queue-status-interval", "0.2"});
    ASSERT_TRUE(ext->WaitReady()) << ext->Log();
  }
  Json PodOf(const std::string& ns, const std::string& name) {
    auto r = cluster.server->Get("pods", ns, name);
    return r.ok() ? *r : Json();
  }
  bool Gated(const std::string& ns, const std::string& name) { return HasGate(PodOf(ns, name)); }
  bool Evicted(const std::string& ns, const std::string& name) {
    auto r = cluster.server->Get("pods", ns, name);
    return !r.ok() || (*r)["metadata"].contains("deletionTimestamp");
  }
  std::string Explain(const std::string& pod) {
    return Http(ext->metrics_port(), "GET", "/debug/explain?pod=" + pod).body;
  }
  Json TeamQueue(const std::string& name) {
    const Json state = ext->State();  // kept alive: the loop walks into it
    if (!state.is_object() || !state.contains("teamQueues")) return Json();
    for (const Json& q : state["teamQueues"]) {
      if (q.value("name", "") == name) return q;
    }
    return Json();
  }
};

TEST_F(QueueFixture, FreeGpusGoToTheQueueWithinItsNominalBeforeAnOlderHigherTierBorrower) {
  SeedQueues();
  SeedGang("team-a", "a-1", 1000, "dgx-1");  // A at its nominal 8
  SeedGang("team-a", "a-2", 1000);           // A floods: would borrow B's 8
  SeedGang("team-b", "b-1", 0, "", "team-b");
  StartExtender();
  // One pass: dgx-2 is free and team-b is within its nominal quota.
  ASSERT_TRUE(WaitUntil([&] { return !Gated("team-b", "b-1"); })) << Explain("team-b/b-1");
  ASSERT_TRUE(WaitUntil([&] { return Explain("team-a/a-2").find("queue team-a") != std::string::npos; }))
      << Explain("team-a/a-2");
  EXPECT_TRUE(Gated("team-a", "a-2"));
  const std::string why = Explain("team-a/a-2");
  EXPECT_NE(why.find("H100: 8/8"), std::string::npos) << why;
  EXPECT_NE(why.find("queue team-a is at"), std::string::npos) << why;  // the engine's reason
  EXPECT_FALSE(Evicted("team-a", "a-1"));
  const Json a = TeamQueue("team-a");
  EXPECT_EQ(a["pendingGangs"], 1) << ext->State().dump();
  EXPECT_EQ(a["pools"][0]["usage"], 8.0) << a.dump();
  // The same numbers as gauges (the dashboard's queue panels and the below-nominal alert).
  const std::string metrics = Http(ext->metrics_port(), "GET", "/metrics").body;
  EXPECT_NE(metrics.find("phalanx_queue_pending_gangs{queue=\"team-a\"} 1"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("phalanx_queue_nominal_gpus{queue=\"team-b\",pool=\"H100\"} 8"), std::string::npos) << metrics;
}

TEST_F(QueueFixture, ABorrowedGangIsReclaimedWholeForTheQueueBelowNominalNeverTheOneWithinIt) {
  SeedQueues();
  SeedGang("team-a", "a-1", 1000, "dgx-1");
  SeedGang("team-a", "a-2", 1000, "dgx-2");  // borrowed from team-b's unused 8
  SeedGang("team-a", "a-3", 1000);           // and more waiting
  StartExtender();
  ASSERT_TRUE(WaitUntil([&] { return ext->State()["cluster"]["freeGpus"] == 0; })) << ext->State().dump();
  ASSERT_TRUE(WaitUntil([&] { return TeamQueue("team-a")["pools"][0]["borrowed"] == 8.0; })) << ext->State().dump();

  SeedGang("team-b", "b-1", 0, "", "team-b");
  // Exactly one of A's gangs (the borrowed one) is evicted; the other keeps running.
  ASSERT_TRUE(WaitUntil([&] { return Evicted("team-a", "a-1") || Evicted("team-a", "a-2"); }))
      << Explain("team-b/b-1") << "\n" << ext->State().dump();
  const std::string victim = Evicted("team-a", "a-1") ? "a-1" : "a-2";
  const std::string kept = victim == "a-1" ? "a-2" : "a-1";
  EXPECT_FALSE(Evicted("team-a", kept));
  EXPECT_TRUE(Gated("team-b", "b-1"));  // not before the GPUs are really free
  // The kubelet finishes the eviction; the GPUs go to team-b, not to A's waiting a-3.
  ASSERT_TRUE(cluster.server->Delete("pods", "team-a", victim, {.grace_period_seconds = 0}).ok());
  ASSERT_TRUE(WaitUntil([&] { return !Gated("team-b", "b-1"); })) << Explain("team-b/b-1");
  EXPECT_TRUE(Gated("team-a", "a-3"));
  EXPECT_FALSE(Evicted("team-a", kept)) << "work within team-a's nominal quota was preempted";
  EXPECT_TRUE(WaitUntil([&] { return TeamQueue("team-a")["pools"][0]["borrowed"] == 0.0; })) << ext->State().dump();
  // The extender writes each queue's standing through the status subresource.
  auto status = cluster.server->WaitFor("gpuqueues.phalanx.io", "", "team-b", [](const Json& q) {
    return q.contains("status") && q["status"].contains("pools") && q["status"]["pools"][0].value("usage", 0.0) == 8.0;
  });
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ((*status)["status"]["usageSummary"], "H100: 8/8") << status->dump();
  EXPECT_EQ((*status)["spec"]["quotas"][0]["nominal"], 8) << "the status write must not touch spec";
  // Conditions (metav1.Condition): team-b is enforced and, once reclaimed, not below nominal.
  auto condition = [](const Json& q, const std::string& type) {
    for (const Json& c : q["status"].value("conditions", Json::array())) {
      if (c.value("type", "") == type) return c;
    }
    return Json();
  };
  const Json active = condition(*status, "Active");
  EXPECT_EQ(active.value("status", ""), "True") << status->dump();
  EXPECT_EQ(active.value("reason", ""), "Enforced") << status->dump();
  EXPECT_FALSE(active.value("lastTransitionTime", "").empty()) << status->dump();
  auto a = cluster.server->WaitFor("gpuqueues.phalanx.io", "", "team-a", [](const Json& q) {
    return q.contains("status") && q["status"].value("pendingGangs", -1) == 1 &&
           q["status"]["pools"][0].value("usage", 0.0) == 8.0;
  });
  ASSERT_TRUE(a.ok()) << a.status();
  // team-a waits at its nominal 8: work pending, but not below nominal.
  EXPECT_EQ(condition(*a, "BelowNominalWithPendingWork").value("reason", ""), "AtNominal") << a->dump();
  // No write churn: with nothing changing, the objects stay as they are.
  const std::string version = (*a)["metadata"].value("resourceVersion", "");
  std::this_thread::sleep_for(std::chrono::seconds(1));  // 5 status intervals of 0.2 s
  auto again = cluster.server->Get("gpuqueues.phalanx.io", "", "team-a");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)["metadata"].value("resourceVersion", ""), version) << "status rewritten without a change";
}

TEST_F(QueueFixture, ABorrowedTrainingJobIsAskedToCheckpointAndStopInsteadOfEvicted) {
  SeedQueues();
  for (const char* job : {"job-1", "job-2"}) cluster.Seed(TrainingJob("team-a", job, 1e6, 30));
  SeedGang("team-a", "a-1", 1000, "dgx-1", "", "job-1");
  SeedGang("team-a", "a-2", 1000, "dgx-2", "", "job-2");
  StartExtender();
  ASSERT_TRUE(WaitUntil([&] { return TeamQueue("team-a")["pools"][0]["borrowed"] == 8.0; })) << ext->State().dump();
  SeedGang("team-b", "b-1", 0, "", "team-b");
  auto asked = [&](const std::string& job) {
    auto tj = cluster.server->Get("trainingjobs.phalanx.io", "team-a", job);
    return tj.ok() && (*tj)["metadata"].contains("annotations") &&
           (*tj)["metadata"]["annotations"].contains("phalanx.io/preempt-request");
  };
  ASSERT_TRUE(WaitUntil([&] { return asked("job-1") || asked("job-2"); })) << ext->Log();
  const bool first = asked("job-1");
  EXPECT_NE(first, asked("job-2")) << "one gang was borrowed; both were asked";
  // Graceful: nothing is evicted; the operator stops the job after its checkpoint.
  EXPECT_FALSE(Evicted("team-a", "a-1"));
  EXPECT_FALSE(Evicted("team-a", "a-2"));
  EXPECT_TRUE(Gated("team-b", "b-1"));
  ASSERT_TRUE(cluster.server->Delete("pods", "team-a", first ? "a-1" : "a-2", {.grace_period_seconds = 0}).ok());
  ASSERT_TRUE(WaitUntil([&] { return !Gated("team-b", "b-1"); })) << Explain("team-b/b-1");
  EXPECT_FALSE(Evicted("team-a", first ? "a-2" : "a-1"));
}

TEST_F(QueueFixture, AMalformedGpuQueueIsSkippedWithAWarningNamingTheFieldAndChangesNothing) {
  SeedQueues();
  StartExtender();
  ASSERT_TRUE(WaitUntil([&] { return !TeamQueue("team-b").is_null(); })) << ext->State().dump();
  Json bad = GpuQueue("team-b", 8);
  bad["spec"]["quotas"][0]["nominal"] = "lots";
  cluster.Seed(bad);
  ASSERT_TRUE(WaitUntil([&] {
    auto events = cluster.server->List("events.events.k8s.io");
    if (!events.ok()) return false;
    for (const Json& e : *events) {
      if (e.value("reason", "") == "InvalidGpuQueue" &&
          e.value("note", "").find("spec.quotas[0].nominal") != std::string::npos) {
        return true;
      }
    }
    return false;
  })) << ext->Log();
  // team-b keeps its last valid quota.
  EXPECT_EQ(TeamQueue("team-b")["pools"][0]["nominal"], 8.0) << ext->State().dump();
}

// A GpuQueue the schema accepts but the set refuses (its parent does not exist) is not enforced,
// and its status says why; the queues in force keep running and say their new set is not applied.
TEST_F(QueueFixture, AQueueWhoseParentIsMissingSaysWhyInItsActiveCondition) {
  SeedQueues();
  StartExtender();
  ASSERT_TRUE(WaitUntil([&] { return !TeamQueue("team-b").is_null(); })) << ext->State().dump();
  auto created = cluster.server->Create("gpuqueues.phalanx.io",
                                        Json{{"apiVersion", "phalanx.io/v1alpha1"},
                                             {"kind", "GpuQueue"},
                                             {"metadata", {{"name", "team-c"}}},
                                             {"spec", {{"parent", "org"}, {"quotas", Json::array({{{"pool", "H100"}, {"nominal", 2}}})}}}});
  ASSERT_TRUE(created.ok()) << created.status();
  auto active = [](const Json& q) {
    for (const Json& c : q.value("status", Json::object()).value("conditions", Json::array())) {
      if (c.value("type", "") == "Active") return c;
    }
    return Json::object();
  };
  auto c = cluster.server->WaitFor("gpuqueues.phalanx.io", "", "team-c", [&](const Json& q) {
    return active(q).value("reason", "") == "QueueSetInvalid";
  });
  ASSERT_TRUE(c.ok()) << c.status() << "\n" << ext->Log();
  EXPECT_EQ(active(*c)["status"], "False");
  EXPECT_NE(active(*c).value("message", "").find("spec.parent"), std::string::npos) << c->dump();
  EXPECT_FALSE((*c)["status"].contains("pools")) << "a queue not enforced shows no usage";
  auto b = cluster.server->WaitFor("gpuqueues.phalanx.io", "", "team-b", [&](const Json& q) {
    return active(q).value("reason", "") == "PreviousSpecInForce";
  });
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(active(*b)["status"], "True");
  EXPECT_EQ(TeamQueue("team-b")["pools"][0]["nominal"], 8.0) << ext->State().dump();
}

TEST(QueueWithoutCrd, TheExtenderRunsWithoutQueuesAndSaysSo) {
  Cluster cluster;
  cluster.Start("QueueWithoutCrd");
  for (const char* n : {"dgx-1", "dgx-2"}) cluster.Seed(DgxNode(n));
  ExtenderProcess ext("QueueWithoutCrd", cluster.kubeconfig);
  ASSERT_TRUE(ext.WaitReady()) << ext.Log();
  EXPECT_NE(Http(ext.metrics_port(), "GET", "/readyz").body.find("GpuQueue CRD not installed"), std::string::npos);
  cluster.Seed(Pod({.name = "g-0", .gpus = 8, .gang = "g", .min_members = 1, .gated = true}));
  EXPECT_TRUE(WaitUntil([&] { return !HasGate(cluster.Get("ml", "g-0")); })) << ext.Log();
  const Json state = ext.State();
  EXPECT_TRUE(state.contains("teamQueues") && state["teamQueues"].empty()) << state.dump();
}

}  // namespace
}  // namespace phalanx::extender::itest
