// The real daemon against the fake API server, with its per-client request counters: after the
// first sync the plugin costs the API server no pod LIST and at most one pod/node request per
// 10 s (an open watch, writes only on change); GetPreferredAllocation answers the extender's
// choice from the watch's cache without an API call; a dropped watch resumes without a list,
// a 410 relists once; GPU health and registration become Events on the Node.
#include <fstream>

#include "core/json/json.h"
#include "tests/e2e/drivers/pod_facts.h"
#include "tests/fakes/apiserver/fake_apiserver.h"
#include "tests/integration/device-plugin/plugin_fixture.h"

namespace phalanx::device_plugin::testing {
namespace {

using namespace std::chrono_literals;
using fakes::apiserver::FakeApiServer;
using e2e::Annotation;
using json::Json;

constexpr const char* kPlugin = "phalanx-device-plugin";
constexpr const char* kPcie[] = {"GPU-349a23a6-dc97-50d5-b014-908d58b8b10b", "GPU-6e10a733-a00b-5c95-81e9-d4a9649072ea",
                                 "GPU-a1930b48-810e-5cd8-a1d2-010b872b6d9e", "GPU-4ce6687a-0c69-5492-84a4-cdc1a1305a07"};

Json Pod(const std::string& name, const std::string& node, const std::string& devices = "") {
  Json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", name}, {"namespace", "ml"}}},
              {"spec",
               {{"nodeName", node},
                {"containers", Json::array({{{"name", "main"},
                                             {"image", "trainer"},
                                             {"resources", {{"limits", {{"nvidia.com/gpu", "1"}}}}}}})}}}};
  if (!devices.empty()) pod["metadata"]["annotations"] = {{"phalanx.io/devices", devices}};
  return pod;
}

class SteadyStateTest : public PluginTest {
 protected:
  void SetUp() override {
    PluginTest::SetUp();
    // No bookmarks: the plugin's resourceVersion stays where its own events left it, so a
    // compaction below reliably makes its watch 410.
    auto started = FakeApiServer::Start({.bookmark_interval = std::chrono::hours(1)});
    ASSERT_TRUE(started.ok()) << started.status();
    api_ = std::move(started).value();
    ASSERT_TRUE(api_->Create("nodes", Json{{"metadata", {{"name", "node-1"}}}}).ok());
    ASSERT_TRUE(api_->Create("namespaces", Json{{"metadata", {{"name", "ml"}}}}).ok());
    ASSERT_TRUE(api_->WriteKubeconfig(Path("kubeconfig")).ok());
    publish_ = true;
  }
  void TearDown() override {
    PluginTest::TearDown();  // the daemon first: it must not outlive its API server
    api_.reset();
  }
  // Pod and node requests the plugin made (any verb).
  uint64_t PodAndNodeRequests() const {
    return api_->RequestCount(kPlugin, "", "pods") + api_->RequestCount(kPlugin, "", "nodes");
  }
  bool HasEvent(const std::string& reason, const std::string& note_part = "") {
    auto events = api_->List("events.events.k8s.io", "default");
    if (!events.ok()) return false;
    for (const auto& e : *events) {
      if (e.value("reason", "") == reason && e["regarding"].value("name", "") == "node-1" &&
          e.value("note", "").find(note_part) != std::string::npos) {
        return true;
      }
    }
    return false;
  }

  std::unique_ptr<FakeApiServer> api_;
};

TEST_F(SteadyStateTest, WatchesInsteadOfPollingAndAnswersPreferredAllocationFromTheCache) {
  StartKubelet();
  const std::string xids = Path("xids");
  std::ofstream(xids).close();
  auto& d = StartDaemon("pcie-4gpu", {"--kubeconfig", Path("kubeconfig")}, {{"FAKE_NVML_EVENTS", xids}});
  ASSERT_TRUE(kubelet_->WaitForRegistrations(1, kDeadline)) << d.log();
  auto published = api_->WaitFor("nodes", "", "node-1", [](const Json& n) {
    return !Annotation(n, "phalanx.io/gpu-topology").empty() && !Annotation(n, "phalanx.io/gpu-state").empty();
  });
  ASSERT_TRUE(published.ok()) << published.status() << d.log();
  ASSERT_TRUE(WaitUntil([&] { return HasEvent("Registered", "nvidia.com/gpu"); })) << d.log();
  // Synced: one list, one watch, and the readiness that says so.
  ASSERT_TRUE(WaitUntil([&] { return HttpGet(d.MetricsPort(), "/readyz").rfind("200", 0) == 0; }))
      << HttpGet(d.MetricsPort(), "/readyz");
  EXPECT_EQ(api_->RequestCount(kPlugin, "list", "pods"), 1u) << api_->request_counts().ToJson().dump();
  EXPECT_EQ(api_->RequestCount(kPlugin, "watch", "pods"), 1u) << api_->request_counts().ToJson().dump();

  // Kubelet admits a pod the extender annotated: the answer is the annotation, and the
  // plugin asks the API server nothing for it.
  auto* p = Plugin("nvidia.com/gpu");
  ASSERT_NE(p, nullptr);
  ASSERT_TRUE(api_->Create("pods", Pod("w0", "node-1", Json{{"main", {kPcie[3]}}}.dump())).ok());
  const uint64_t before = PodAndNodeRequests();
  v1beta1::PreferredAllocationRequest req;
  auto* c = req.add_container_requests();
  for (const char* id : kPcie) c->add_available_deviceids(id);
  c->set_allocation_size(1);
  auto preferred = p->GetPreferredAllocation(req, 10s);
  ASSERT_TRUE(preferred.ok()) << preferred.status();
  ASSERT_EQ(preferred->container_responses(0).deviceids_size(), 1);
  EXPECT_EQ(preferred->container_responses(0).deviceids(0), kPcie[3]);
  EXPECT_EQ(PodAndNodeRequests(), before) << api_->request_counts().ToJson().dump() << d.log();

  // Steady state over a generous window, with pod churn elsewhere in the cluster: no pod
  // LIST, at most one pod/node request per 10 s.
  api_->ClearRequestCounts();
  const auto window = 12s;
  const auto end = std::chrono::steady_clock::now() + window;
  for (int i = 0; std::chrono::steady_clock::now() < end; ++i) {
    const std::string name = "other-" + std::to_string(i);
    ASSERT_TRUE(api_->Create("pods", Pod(name, "node-2")).ok());
    ASSERT_TRUE(api_->Delete("pods", "ml", name).ok());
    std::this_thread::sleep_for(200ms);  // pacing the churn, not waiting for a result
  }
  EXPECT_EQ(api_->RequestCount(kPlugin, "list", "pods"), 0u) << api_->request_counts().ToJson().dump();
  EXPECT_LE(PodAndNodeRequests(), 1u) << api_->request_counts().ToJson().dump();

  // A dropped watch resumes from its resourceVersion (no list); a 410 relists exactly once.
  api_->ClearRequestCounts();
  api_->DropWatches();
  ASSERT_TRUE(WaitUntil([&] { return api_->RequestCount(kPlugin, "watch", "pods") >= 1; })) << d.log();
  EXPECT_EQ(api_->RequestCount(kPlugin, "list", "pods"), 0u) << api_->request_counts().ToJson().dump();
  // History moves on and is compacted past the plugin's version (no bookmarks in this test).
  ASSERT_TRUE(api_->Create("configmaps", Json{{"metadata", {{"name", "bump"}, {"namespace", "ml"}}}}).ok());
  api_->CompactHistory();
  api_->DropWatches();
  ASSERT_TRUE(WaitUntil([&] { return api_->RequestCount(kPlugin, "list", "pods") == 1; })) << d.log();
  // The cache survived both: a pod created now is seen through the new watch.
  ASSERT_TRUE(api_->Create("pods", Pod("w1", "node-1", Json{{"main", {kPcie[0]}}}.dump())).ok());
  c->clear_available_deviceids();
  for (const char* id : {kPcie[0], kPcie[1], kPcie[2]}) c->add_available_deviceids(id);
  preferred = p->GetPreferredAllocation(req, 10s);
  ASSERT_TRUE(preferred.ok()) << preferred.status();
  EXPECT_EQ(preferred->container_responses(0).deviceids(0), kPcie[0]);
  EXPECT_EQ(api_->RequestCount(kPlugin, "list", "pods"), 1u) << api_->request_counts().ToJson().dump();

  // A GPU falls off the bus: one node write with the new health, and a Warning Event.
  api_->ClearRequestCounts();
  std::ofstream(xids, std::ios::app) << R"({"gpu": 2, "type": "xid", "xid": 79})" << "\n";
  auto unhealthy = api_->WaitFor("nodes", "", "node-1", [](const Json& n) {
    return Annotation(n, "phalanx.io/gpu-state").find("Unhealthy") != std::string::npos;
  });
  ASSERT_TRUE(unhealthy.ok()) << unhealthy.status() << d.log();
  ASSERT_TRUE(WaitUntil([&] { return HasEvent("GpuUnhealthy", "XID 79"); })) << d.log();
  EXPECT_GE(api_->RequestCount(kPlugin, "patch", "nodes"), 1u);
  EXPECT_LE(api_->RequestCount(kPlugin, "patch", "nodes"), 2u) << api_->request_counts().ToJson().dump();
  EXPECT_EQ(api_->RequestCount(kPlugin, "list", "pods"), 0u) << api_->request_counts().ToJson().dump();
}

}  // namespace
}  // namespace phalanx::device_plugin::testing
