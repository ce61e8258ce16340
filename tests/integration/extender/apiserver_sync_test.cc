// The informers of API-server mode (issue 5 item 2): adds, updates and deletes of nodes, pods
// and PriorityClasses reach the ledger; readiness waits for the sync and survives RBAC that
// forbids PriorityClasses.
#include "tests/integration/extender/apiserver_harness.h"

namespace phalanx::extender::itest {
namespace {

struct SyncFixture : ::testing::Test {
  Cluster cluster;
  std::unique_ptr<ExtenderProcess> ext;
  void SetUp() override { cluster.Start(::testing::UnitTest::GetInstance()->current_test_info()->name()); }
  void TearDown() override {
    if (HasFailure() && ext) std::cerr << "--- extender log ---\n" << ext->Log() << "\n";
  }
  void StartExtender() {
    ext = std::make_unique<ExtenderProcess>(::testing::UnitTest::GetInstance()->current_test_info()->name(),
                                            cluster.kubeconfig);
    ASSERT_TRUE(ext->WaitReady()) << ext->Log();
  }
  Json PodState(const std::string& key) {
    const Json state = ext->State();
    for (const auto& p : state["pods"]) {
      if (p["pod"] == key) return p;
    }
    return Json();
  }
};

TEST_F(SyncFixture, NodeAndPodAddsUpdatesAndDeletesReachTheLedger) {
  StartExtender();
  cluster.Seed(DgxNode("dgx-1"));
  ASSERT_TRUE(WaitUntil([&] { return ext->State()["cluster"]["totalGpus"] == 8; })) << ext->State().dump();
  cluster.Seed(Pod({.name = "a", .gpus = 3, .priority = 1000, .node = "dgx-1"}));
  ASSERT_TRUE(WaitUntil([&] { return ext->State()["cluster"]["freeGpus"] == 5; })) << ext->State().dump();
  // The device plugin's commit of devices moves the assumption onto the real GPUs.
  ASSERT_TRUE(cluster.server
                  ->Patch("pods", "ml", "a", fa::PatchType::kMerge,
                          R"({"metadata":{"annotations":{"phalanx.io/devices":"{\"main\":[\"GPU-dgx-1-5\",\"GPU-dgx-1-6\",\"GPU-dgx-1-7\"]}"}}})")
                  .ok());
  ASSERT_TRUE(WaitUntil([&] { return PodState("ml/a")["gpus"] == Json::array({5, 6, 7}); })) << ext->State().dump();
  EXPECT_EQ(PodState("ml/a")["holding"], "committed");
  // Pods without GPUs never reach the ledger (neither a zero request nor no resources at all).
  cluster.Seed(Pod({.name = "zero", .gpus = 0, .node = "dgx-1"}));
  Json cpu = Pod({.name = "cpu", .node = "dgx-1"});
  cpu["spec"]["containers"][0].erase("resources");
  cluster.Seed(cpu);
  cluster.Seed(Pod({.name = "b", .gpus = 1, .priority = 1000, .node = "dgx-1"}));  // after them in the watch
  ASSERT_TRUE(WaitUntil([&] { return ext->State()["cluster"]["freeGpus"] == 4; })) << ext->State().dump();
  EXPECT_EQ(ext->State()["cluster"]["pods"], 2);
  ASSERT_TRUE(cluster.server->Delete("pods", "ml", "b", {.grace_period_seconds = 0}).ok());
  ASSERT_TRUE(cluster.server->Delete("pods", "ml", "a", {.grace_period_seconds = 0}).ok());
  ASSERT_TRUE(WaitUntil([&] { return ext->State()["cluster"]["freeGpus"] == 8; })) << ext->State().dump();
  ASSERT_TRUE(cluster.server->Delete("nodes", "", "dgx-1").ok());
  ASSERT_TRUE(WaitUntil([&] { return ext->State()["cluster"]["totalGpus"] == 0; })) << ext->State().dump();
}

// Issue 27 §5: an annotation over its size limit (or malformed) is refused with a log line and a
// counter, once per new refusal, and the rest of the object is still used.
TEST_F(SyncFixture, OversizeAndMalformedAnnotationsAreRefusedLoggedAndCounted) {
  StartExtender();
  const std::string gpu_state = "phalanx_extender_annotations_refused_total{annotation=\"phalanx.io/gpu-state\"}";
  const std::string devices = "phalanx_extender_annotations_refused_total{annotation=\"phalanx.io/devices\"}";
  Json node = DgxNode("dgx-1");
  // 300 KiB: over the 256 KiB limit of phalanx.io/gpu-state. A real API server refuses annotations
  // over 256 KiB in all first; the extender does not rely on it.
  node["metadata"]["annotations"]["phalanx.io/gpu-state"] = "{\"devices\":[" + std::string(300 << 10, ' ') + "]}";
  cluster.Seed(node);
  ASSERT_TRUE(WaitUntil([&] { return ext->Metric(gpu_state) == 1; })) << ext->Log();
  EXPECT_EQ(ext->State()["cluster"]["totalGpus"], 8) << "the node itself is still used";
  EXPECT_NE(ext->Log().find("Refused annotation"), std::string::npos);
  // An update that keeps the same refusal does not count it again; a pod's bad devices does.
  node["metadata"]["labels"]["touched"] = "1";
  cluster.Seed(node);
  Json pod = Pod({.name = "a", .gpus = 1, .priority = 1000, .node = "dgx-1"});
  pod["metadata"]["annotations"]["phalanx.io/devices"] = "not json";
  cluster.Seed(pod);
  ASSERT_TRUE(WaitUntil([&] { return ext->Metric(devices) == 1; })) << ext->Log();
  EXPECT_EQ(ext->Metric(gpu_state), 1);
}

TEST_F(SyncFixture, APodWithoutSpecPriorityGetsItsPriorityClassValue) {
  cluster.Seed(Json{{"apiVersion", "scheduling.k8s.io/v1"},
                    {"kind", "PriorityClass"},
                    {"metadata", {{"name", "phalanx-high"}}},
                    {"value", 10000}});
  Json pod = Pod({.name = "g-0", .gpus = 1, .gang = "g", .min_members = 2, .gated = true});
  pod["spec"].erase("priority");
  pod["spec"]["priorityClassName"] = "phalanx-high";
  cluster.Seed(pod);
  StartExtender();
  ASSERT_TRUE(WaitUntil([&] { return PodState("ml/g-0")["priority"] == 10000; })) << ext->State().dump();
}

TEST_F(SyncFixture, ForbiddenPriorityClassesDoNotKeepTheExtenderUnready) {
  cluster.server->FailNext({.verb = "list", .path_contains = "priorityclasses", .code = 403, .count = 1});
  cluster.Seed(DgxNode("dgx-1"));
  StartExtender();
  EXPECT_EQ(ext->State()["cluster"]["totalGpus"], 8);
  EXPECT_NE(ext->Log().find("Not allowed to list PriorityClasses"), std::string::npos);
}

// Without the TrainingJob CRD the extender is active (gangs from pod labels) and /readyz says
// what it runs without, in its 200 body.
TEST_F(SyncFixture, AReadyExtenderWithoutTheCrdSaysSoInReadyz) {
  cluster.server->FailNext({.verb = "list", .path_contains = "trainingjobs", .code = 404, .count = 1000000,
                            .message = "the server could not find the requested resource"});
  cluster.Seed(DgxNode("dgx-1"));
  StartExtender();
  const HttpReply ready = Http(ext->metrics_port(), "GET", "/readyz");
  EXPECT_EQ(ready.status, 200);
  EXPECT_EQ(ready.body.rfind("ok: ", 0), 0u) << ready.body;
  EXPECT_NE(ready.body.find("TrainingJob CRD not installed: gangs from pod labels only"), std::string::npos)
      << ready.body;
}

TEST_F(SyncFixture, MigPodsReachTheLedgerAndABindHoldsTheDevice) {
  cluster.Seed(A100MigNode("a100"));
  auto mig_pod = [](const std::string& name) {
    Json pod = Pod({.name = name, .priority = 1000});
    pod["spec"]["containers"][0]["resources"] = {{"limits", {{"nvidia.com/mig-3g.40gb", "1"}}}};
    return pod;
  };
  cluster.Seed(mig_pod("m1"));
  cluster.Seed(mig_pod("m2"));
  StartExtender();
  const Json m1 = cluster.Get("ml", "m1"), m2 = cluster.Get("ml", "m2");
  ASSERT_EQ(Passed(ext->Post("filter", FilterBody(m1, {"a100"}))).size(), 1u);
  EXPECT_EQ(BindError(ext->Post("bind", BindBody(m1, "a100"))), "");
  const Json bound = cluster.Get("ml", "m1");
  EXPECT_EQ(bound["spec"].value("nodeName", ""), "a100");
  EXPECT_EQ(bound["metadata"]["annotations"]["phalanx.io/devices"], R"({"main":["MIG-a100-1-0"]})");
  // The node's only 3g.40gb device is held (by the bind, then by the informer's echo of it).
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(Passed(ext->Post("filter", FilterBody(m2, {"a100"}))).empty());
  }
  // After a restart the devices annotation alone keeps it held.
  ext->Signal(SIGTERM);
  EXPECT_EQ(ext->Wait(), 0);
  StartExtender();
  EXPECT_TRUE(Passed(ext->Post("filter", FilterBody(m2, {"a100"}))).empty());
}

}  // namespace
}  // namespace phalanx::extender::itest
