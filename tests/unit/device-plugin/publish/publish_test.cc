// Node state builders and the Publisher against an in-memory NodeApi, a PodCache fed
// directly (as the pod watch would) and the fake kubelet's pod-resources server.
#include <unistd.h>

#include <filesystem>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "core/log/log.h"
#include "core/log/logger_factory.h"
#include "core/metrics/registry.h"
#include "core/topology/reference_machines.h"
#include "core/topology/topology_codec.h"
#include "device-plugin/publish/node_api.h"
#include "device-plugin/publish/node_state.h"
#include "device-plugin/publish/pod_cache.h"
#include "device-plugin/publish/publisher.h"
#include "tests/fakes/kubelet/fake_pod_resources.h"
#include "tests/unit/device-plugin/plugin/test_resources.h"

namespace phalanx::device_plugin {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

class FakeNodeApi final : public NodeApi {
 public:
  Status PatchNode(const std::string& node, const json& patch) override {
    std::lock_guard<std::mutex> lock(mu);
    if (!fail.ok()) return fail;
    patches.push_back({node, patch});
    return OkStatus();
  }
  Status PatchPod(const std::string& ns, const std::string& name, const json& patch) override {
    std::lock_guard<std::mutex> lock(mu);
    if (!fail.ok()) return fail;
    pod_patches.push_back({ns + "/" + name, patch});
    return OkStatus();
  }
  std::mutex mu;
  std::vector<std::pair<std::string, json>> pod_patches;
  Status fail;
  std::vector<std::pair<std::string, json>> patches;
};

bool WaitUntil(const std::function<bool()>& cond, std::chrono::milliseconds deadline = 20s) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  while (!cond()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

TEST(NodeStateTest, LabelsAreLabelSafe) {
  EXPECT_EQ(LabelValue("NVIDIA H100 80GB HBM3"), "NVIDIA-H100-80GB-HBM3");
  EXPECT_EQ(LabelValue("  (A100-SXM4-80GB)  "), "A100-SXM4-80GB");
  EXPECT_EQ(LabelValue(std::string(100, 'a')).size(), 63u);
  EXPECT_EQ(LabelValue("!!!"), "");
  auto labels = NodeLabels(topology::MakeDgxH100Node(), true);
  EXPECT_EQ(labels.at("phalanx.io/gpu.product"), "NVIDIA-H100-80GB-HBM3");
  EXPECT_EQ(labels.at("phalanx.io/gpu.count"), "8");
  EXPECT_EQ(labels.at("phalanx.io/gpu.memory-mib"), "81559");
  EXPECT_EQ(labels.at("phalanx.io/mig.capable"), "true");
  EXPECT_EQ(labels.count("phalanx.io/nvlink-domain"), 0u);
}

TEST(NodeStateTest, GpuStateUsesAdvertisedIdsHealthAndPodUids) {
  auto node = topology::MakePcie4GpuNode();
  std::vector<ResourceSpec> resources = {testing::WholeGpuResource(node)};
  HealthTable health;
  const std::string g0 = node.gpus[0].uuid.str(), g3 = node.gpus[3].uuid.str();
  health.SetUnhealthy(g3, "XID 79", 79, MonotonicTime{});
  json doc = GpuStateDocument(resources, health, {{g0, "uid-1"}});
  EXPECT_EQ(doc["version"], 1);
  ASSERT_EQ(doc["devices"].size(), 4u);
  EXPECT_EQ(doc["devices"][g0]["health"], "Healthy");
  EXPECT_EQ(doc["devices"][g0]["podUID"], "uid-1");
  EXPECT_FALSE(doc["devices"][g0].contains("reason"));
  EXPECT_EQ(doc["devices"][g3]["health"], "Unhealthy");
  EXPECT_EQ(doc["devices"][g3]["reason"], "XID 79");
  EXPECT_EQ(doc["devices"][g3]["xid"], 79);
  EXPECT_TRUE(doc["devices"][g3]["podUID"].is_null());
  // The topology annotation carries GPU health too and stays decodable.
  auto t = WithHealth(node, health);
  EXPECT_EQ(t.gpus[3].health, topology::Health::kUnhealthy);
  auto enc = topology::EncodeTopology(t);
  ASSERT_TRUE(enc.ok()) << enc.status();
  EXPECT_TRUE(topology::DecodeTopology(*enc).ok());
}

TEST(NodeStateTest, PatchTouchesOnlyOurKeys) {
  json p = NodePatch({{"phalanx.io/gpu.count", "8"}}, "{}", "{\"version\":1}");
  EXPECT_EQ(p.size(), 1u);
  EXPECT_EQ(p["metadata"].size(), 2u);
  EXPECT_EQ(p["metadata"]["labels"]["phalanx.io/gpu.count"], "8");
  EXPECT_EQ(p["metadata"]["annotations"]["phalanx.io/gpu-state"], "{\"version\":1}");
  EXPECT_EQ(p["metadata"]["annotations"]["phalanx.io/gpu-topology"], "{}");
}

TEST(DecodePodTest, ReadsWhatThePublisherNeeds) {
  auto p = DecodePod(json::parse(R"({"metadata":{"uid":"u1","namespace":"ml","name":"w0",
      "creationTimestamp":"2026-11-22T09:11:01Z","resourceVersion":"4711","deletionTimestamp":"2026-11-22T09:12:00Z",
      "annotations":{"phalanx.io/devices":"{\"c\":[\"GPU-a\"]}"}},
    "spec":{"initContainers":[{"name":"i","resources":{"requests":{"cpu":"1"}}}],
            "containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpu":"2"},"requests":{"nvidia.com/gpu":"2"}}}]},
    "status":{"phase":"Pending"}})"));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->uid, "u1");
  EXPECT_EQ(p->ns, "ml");
  EXPECT_EQ(p->resource_version, 4711u);
  EXPECT_TRUE(p->deleting);
  EXPECT_EQ(p->phase, "Pending");
  EXPECT_EQ(p->devices_annotation, R"({"c":["GPU-a"]})");
  EXPECT_EQ(p->resources, (std::vector<std::string>{"cpu", "nvidia.com/gpu"}));
  ASSERT_EQ(p->containers.size(), 2u);  // kubelet's order: the init container first
  EXPECT_TRUE(p->containers[0].init);
  EXPECT_EQ(p->containers[0].counts.at("cpu"), 1);
  EXPECT_EQ(p->containers[1].name, "c");
  EXPECT_EQ(p->containers[1].counts.at("nvidia.com/gpu"), 2);
  EXPECT_FALSE(DecodePod(json::parse(R"({"metadata":{"name":"x"}})")).ok());
}

TEST(DevicesAnnotationTest, Parses) {
  auto ids = ParseDevicesAnnotation(R"({"main":["GPU-a","GPU-b"],"side":["MIG-c"]})");
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(ids->size(), 3u);
  EXPECT_FALSE(ParseDevicesAnnotation("[1]").ok());
  EXPECT_FALSE(ParseDevicesAnnotation(R"({"main":"GPU-a"})").ok());
  EXPECT_FALSE(ParseDevicesAnnotation("{").ok());
}

class PublisherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/phx-pub-XXXXXX";
    dir_ = mkdtemp(pattern);
    auto pr = fake_kubelet::FakePodResources::Start(dir_ + "/kubelet.sock");
    ASSERT_TRUE(pr.ok()) << pr.status();
    fake_pr_ = std::move(pr).value();
    client_ = std::make_unique<PodResourcesClient>(dir_ + "/kubelet.sock");
    resources_ = {testing::WholeGpuResource(node_)};
    pods_.SetSynced();
  }
  void TearDown() override {
    publisher_.reset();
    fake_pr_.reset();
    std::filesystem::remove_all(dir_);
  }
  Publisher& Make(std::chrono::milliseconds interval = 1000ms, const PluginMetrics* metrics = nullptr) {
    publisher_ = std::make_unique<Publisher>(PublisherOptions{.node_name = "node-1", .interval = interval,
                                                              .max_backoff = 4 * interval, .pod_wait = 300ms},
                                             api_, pods_, client_.get(), node_, false, resources_, health_, metrics,
                                             log::MakeLogger("test"));
    return *publisher_;
  }
  std::string Gpu(int i) const { return node_.gpus[i].uuid.str(); }
  json LastState() {
    std::lock_guard<std::mutex> lock(api_.mu);
    return json::parse(api_.patches.back().second["metadata"]["annotations"]["phalanx.io/gpu-state"].get<std::string>());
  }
  json LastPatch() {
    std::lock_guard<std::mutex> lock(api_.mu);
    return api_.patches.back().second;
  }
  void SetPods(std::vector<PodOnNode> pods) {
    for (auto& p : pods) {
      if (p.resources.empty()) p.resources = {"nvidia.com/gpu"};
      pods_.Put(std::move(p));
    }
  }
  std::vector<std::string> AllGpus() const {
    std::vector<std::string> out;
    for (const auto& g : node_.gpus) out.push_back(g.uuid.str());
    return out;
  }

  std::string dir_;
  topology::NodeTopology node_ = topology::MakePcie4GpuNode();
  std::vector<ResourceSpec> resources_;
  HealthTable health_;
  FakeNodeApi api_;
  PodCache pods_;
  std::unique_ptr<fake_kubelet::FakePodResources> fake_pr_;
  std::unique_ptr<PodResourcesClient> client_;
  std::unique_ptr<Publisher> publisher_;
};

TEST_F(PublisherTest, WritesOnceThenOnlyOnChange) {
  auto& p = Make();
  ASSERT_TRUE(p.PublishOnce().ok());
  ASSERT_TRUE(p.PublishOnce().ok());
  EXPECT_EQ(p.writes(), 1);
  ASSERT_EQ(api_.patches.size(), 1u);
  EXPECT_EQ(api_.patches[0].first, "node-1");
  const json& meta = api_.patches[0].second["metadata"];
  EXPECT_EQ(meta["labels"]["phalanx.io/gpu.product"], "NVIDIA-RTX-A6000");
  auto topo = topology::DecodeTopology(meta["annotations"]["phalanx.io/gpu-topology"].get<std::string>());
  ASSERT_TRUE(topo.ok()) << topo.status();
  EXPECT_EQ(topo->gpu_count(), 4);
  EXPECT_TRUE(p.DegradedReason().empty());

  EXPECT_TRUE(meta["annotations"].contains("phalanx.io/gpu-state"));

  // An allocation appears in pod-resources: the state names the pod's UID, and only the
  // state is sent (labels and topology did not change).
  SetPods({PodOnNode{.uid = "uid-7", .ns = "ml", .name = "w0", .phase = "Running"}});
  fake_pr_->SetPods({fake_kubelet::FakePodResources::MakePod("ml", "w0", "main", "nvidia.com/gpu", {Gpu(2)})});
  ASSERT_TRUE(p.PublishOnce().ok());
  EXPECT_EQ(p.writes(), 2);
  EXPECT_EQ(LastState()["devices"][Gpu(2)]["podUID"], "uid-7");
  EXPECT_TRUE(LastState()["devices"][Gpu(1)]["podUID"].is_null());
  EXPECT_FALSE(LastPatch()["metadata"].contains("labels")) << LastPatch();
  EXPECT_FALSE(LastPatch()["metadata"]["annotations"].contains("phalanx.io/gpu-topology")) << LastPatch();
  // A pod change that does not touch allocations writes nothing.
  SetPods({PodOnNode{.uid = "uid-8", .ns = "ml", .name = "other", .phase = "Pending"}});
  ASSERT_TRUE(p.PublishOnce().ok());
  EXPECT_EQ(p.writes(), 2);
}

TEST_F(PublisherTest, TopologyAndLabelsArePublishedWhilePodResourcesIsUnavailable) {
  auto& p = Make();
  fake_pr_.reset();  // kubelet's pod-resources socket is gone
  Status s = p.PublishOnce();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(p.DegradedReason().find("pod-resources"), std::string::npos) << p.DegradedReason();
  ASSERT_EQ(p.writes(), 1);
  json meta = LastPatch()["metadata"];
  EXPECT_EQ(meta["labels"]["phalanx.io/gpu.count"], "4");
  EXPECT_TRUE(meta["annotations"].contains("phalanx.io/gpu-topology"));
  EXPECT_FALSE(meta["annotations"].contains("phalanx.io/gpu-state")) << meta;
  // Still unavailable: nothing new to write.
  EXPECT_FALSE(p.PublishOnce().ok());
  EXPECT_EQ(p.writes(), 1);
  // Kubelet is back: the state follows, alone.
  auto pr = fake_kubelet::FakePodResources::Start(dir_ + "/kubelet.sock");
  ASSERT_TRUE(pr.ok()) << pr.status();
  fake_pr_ = std::move(pr).value();
  ASSERT_TRUE(WaitUntil([&] { return p.PublishOnce().ok(); }));
  EXPECT_EQ(p.writes(), 2);
  meta = LastPatch()["metadata"];
  EXPECT_FALSE(meta.contains("labels"));
  EXPECT_FALSE(meta["annotations"].contains("phalanx.io/gpu-topology"));
  EXPECT_TRUE(meta["annotations"].contains("phalanx.io/gpu-state"));
  EXPECT_TRUE(p.DegradedReason().empty()) << p.DegradedReason();
}

TEST_F(PublisherTest, StateWaitsForThePodListButTopologyDoesNot) {
  PodCache unsynced;
  Publisher p(PublisherOptions{.node_name = "node-1"}, api_, unsynced, client_.get(), node_, false, resources_,
              health_, nullptr, log::MakeLogger("test"));
  EXPECT_FALSE(p.PublishOnce().ok());
  EXPECT_NE(p.DegradedReason().find("not listed yet"), std::string::npos) << p.DegradedReason();
  ASSERT_EQ(p.writes(), 1);
  EXPECT_FALSE(LastPatch()["metadata"]["annotations"].contains("phalanx.io/gpu-state"));
  unsynced.SetSynced();
  ASSERT_TRUE(p.PublishOnce().ok());
  EXPECT_EQ(p.writes(), 2);
  EXPECT_TRUE(LastPatch()["metadata"]["annotations"].contains("phalanx.io/gpu-state"));
}

TEST_F(PublisherTest, ApiOutageIsDegradedAndRecovers) {
  auto& p = Make();
  api_.fail = UnavailableError("connection refused");
  Status s = p.PublishOnce();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(p.DegradedReason().find("connection refused"), std::string::npos) << p.DegradedReason();
  api_.fail = OkStatus();
  ASSERT_TRUE(p.PublishOnce().ok());
  EXPECT_TRUE(p.DegradedReason().empty());
  EXPECT_EQ(p.writes(), 1);
}

TEST_F(PublisherTest, HealthChangeIsPublishedButAtMostOncePerInterval) {
  auto& p = Make(1000ms);
  p.Start();
  ASSERT_TRUE(WaitUntil([&] { return p.writes() == 1; }));
  const auto first = std::chrono::steady_clock::now();
  health_.SetUnhealthy(Gpu(1), "XID 48", 48, MonotonicTime{});
  health_.SetUnhealthy(Gpu(2), "XID 48", 48, MonotonicTime{});
  ASSERT_TRUE(WaitUntil([&] { return p.writes() == 2; }));
  EXPECT_GE(std::chrono::steady_clock::now() - first, 900ms);  // debounced: ≤ 1 write/s
  auto state = LastState();
  EXPECT_EQ(state["devices"][Gpu(1)]["health"], "Unhealthy");
  EXPECT_EQ(state["devices"][Gpu(2)]["health"], "Unhealthy");
  // Health is in the topology too: it is re-sent; the labels are not.
  EXPECT_TRUE(LastPatch()["metadata"]["annotations"].contains("phalanx.io/gpu-topology"));
  EXPECT_FALSE(LastPatch()["metadata"].contains("labels"));
  p.Stop();
}

ContainerRequest Gpus(std::string name, int n) { return {.name = std::move(name), .counts = {{"nvidia.com/gpu", n}}}; }

// Kubelet's candidates: Pending, not deleting, in arrival order, each with its containers that
// ask for the resource and hold none of its devices, and their plans container by container.
TEST_F(PublisherTest, PendingPodsAreInArrivalOrderWithUnservedContainersAndTheirPlans) {
  auto& p = Make();
  SetPods({
      // Arrives first although its name sorts last.
      PodOnNode{.uid = "z", .ns = "ml", .name = "z", .phase = "Pending",
                .devices_annotation = json{{"c1", {Gpu(3)}}, {"c2", {Gpu(1)}}}.dump(),
                .containers = {Gpus("c1", 1), {.name = "sidecar"}, Gpus("c2", 1)}, .resource_version = 7},
      PodOnNode{.uid = "a", .ns = "ml", .name = "a", .phase = "Pending",
                .devices_annotation = json{{"main", {Gpu(0)}}}.dump(), .containers = {Gpus("main", 1)},
                .resource_version = 9},
      PodOnNode{.uid = "r", .ns = "ml", .name = "running", .phase = "Running", .containers = {Gpus("main", 1)}},
      PodOnNode{.uid = "d", .ns = "ml", .name = "deleting", .phase = "Pending", .deleting = true,
                .containers = {Gpus("main", 1)}},
      PodOnNode{.uid = "n", .ns = "ml", .name = "no-plan", .phase = "Pending", .containers = {Gpus("main", 2)},
                .resource_version = 11},
  });
  // Kubelet allocated z's first container already.
  fake_pr_->SetPods({fake_kubelet::FakePodResources::MakePod("ml", "z", "c1", "nvidia.com/gpu", {Gpu(3)})});
  ASSERT_TRUE(p.PublishOnce().ok());
  auto view = p.PendingPods("nvidia.com/gpu");
  EXPECT_TRUE(view.synced);
  ASSERT_EQ(view.pods.size(), 3u);
  EXPECT_EQ(view.pods[0].key, "ml/z");
  ASSERT_EQ(view.pods[0].containers.size(), 1u);
  EXPECT_EQ(view.pods[0].containers[0].name, "c2");
  EXPECT_TRUE(view.pods[0].containers[0].planned);
  EXPECT_EQ(view.pods[0].containers[0].plan, std::vector<std::string>{Gpu(1)});
  EXPECT_EQ(view.pods[1].key, "ml/a");
  EXPECT_EQ(view.pods[2].key, "ml/no-plan");
  EXPECT_FALSE(view.pods[2].annotated);
  EXPECT_EQ(view.pods[2].containers[0].count, 2);
  EXPECT_FALSE(view.pods[2].containers[0].planned);
  EXPECT_TRUE(p.PendingPods("example.com/fpga").pods.empty());
  // From the cache: the API server is never asked, even when it is down.
  api_.fail = UnavailableError("down");
  EXPECT_EQ(p.PendingPods("nvidia.com/gpu").pods.size(), 3u);
  EXPECT_TRUE(api_.patches.size() == 1u);
}

// The pod cache orders by the version at which the watch first saw each pod, not by name or
// creation time, and an update does not move a pod.
TEST(PodCacheTest, KeepsArrivalOrder) {
  PodCache cache;
  cache.Put(PodOnNode{.uid = "2", .ns = "ml", .name = "b", .resource_version = 20});
  cache.Put(PodOnNode{.uid = "1", .ns = "ml", .name = "a", .resource_version = 21});
  cache.Put(PodOnNode{.uid = "2", .ns = "ml", .name = "b", .phase = "Running", .resource_version = 30});
  auto pods = cache.Pods();
  ASSERT_EQ(pods->size(), 2u);
  EXPECT_EQ((*pods)[0].name, "b");
  EXPECT_EQ((*pods)[0].phase, "Running");
  EXPECT_EQ((*pods)[1].name, "a");
  // A new pod under an old name (new uid) arrives anew.
  cache.Put(PodOnNode{.uid = "3", .ns = "ml", .name = "b", .resource_version = 40});
  EXPECT_EQ((*cache.Pods())[1].uid, "3");
}

// Kubelet admits a pod the watch has not delivered yet: WaitForChange wakes when it arrives,
// and returns false at the deadline.
TEST_F(PublisherTest, WaitForChangeWakesOnTheWatchOrAtTheDeadline) {
  auto& p = Make();
  const auto view = p.PendingPods("nvidia.com/gpu");
  const auto start = std::chrono::steady_clock::now();
  std::thread watch([&] {
    std::this_thread::sleep_for(50ms);
    SetPods({PodOnNode{.uid = "b", .ns = "ml", .name = "b", .phase = "Pending", .containers = {Gpus("main", 1)}}});
  });
  EXPECT_TRUE(p.WaitForChange(view.version, start + 5s));
  const auto waited = std::chrono::steady_clock::now() - start;
  watch.join();
  EXPECT_GE(waited, 40ms);
  EXPECT_LT(waited, 3s);
  const auto next = p.PendingPods("nvidia.com/gpu");
  EXPECT_EQ(next.pods.size(), 1u);
  EXPECT_FALSE(p.WaitForChange(next.version, std::chrono::steady_clock::now() + 50ms));
  EXPECT_EQ(p.watch_grace(), 300ms);
}

// The extender's choice (phalanx.io/devices) is only a preference: kubelet may allocate
// other devices. Each pod whose allocation differs is counted once, under its resource.
TEST_F(PublisherTest, AllocationsThatDifferFromTheAnnotationAreCountedOncePerPod) {
  metrics::Registry registry;
  auto m = PluginMetrics::Register(registry);
  ASSERT_TRUE(m.ok()) << m.status();
  auto& p = Make(1000ms, m->get());
  const std::string want_01 = json{{"main", {Gpu(0), Gpu(1)}}}.dump();
  SetPods({
      PodOnNode{.uid = "u-ok", .ns = "ml", .name = "ok", .phase = "Running", .devices_annotation = want_01},
      PodOnNode{.uid = "u-bad", .ns = "ml", .name = "bad", .phase = "Running",
                .devices_annotation = json{{"main", {Gpu(2), Gpu(3)}}}.dump()},
      PodOnNode{.uid = "u-other", .ns = "ml", .name = "other", .phase = "Running",
                .devices_annotation = json{{"main", {"GPU-not-on-this-node"}}}.dump()},
  });
  fake_pr_->SetPods({
      fake_kubelet::FakePodResources::MakePod("ml", "ok", "main", "nvidia.com/gpu", {Gpu(0), Gpu(1)}),
      fake_kubelet::FakePodResources::MakePod("ml", "bad", "main", "nvidia.com/gpu", {Gpu(2), Gpu(0)}),
      fake_kubelet::FakePodResources::MakePod("ml", "other", "main", "nvidia.com/gpu", {Gpu(3)}),
  });
  const std::string series = "phalanx_device_plugin_annotation_mismatches_total{resource=\"nvidia.com/gpu\"}";
  ASSERT_TRUE(p.PublishOnce().ok());
  std::string text = registry.Expose();
  EXPECT_NE(text.find(series + " 1"), std::string::npos) << text;
  // The next pass sees the same pods: not counted again.
  ASSERT_TRUE(p.PublishOnce().ok());
  text = registry.Expose();
  EXPECT_NE(text.find(series + " 1"), std::string::npos) << text;
  // Another pod that differs: counted.
  SetPods({PodOnNode{.uid = "u-bad2", .ns = "ml", .name = "bad2", .phase = "Running", .devices_annotation = want_01}});
  fake_pr_->SetPods({fake_kubelet::FakePodResources::MakePod("ml", "bad2", "main", "nvidia.com/gpu", {Gpu(3)})});
  ASSERT_TRUE(p.PublishOnce().ok());
  text = registry.Expose();
  EXPECT_NE(text.find(series + " 2"), std::string::npos) << text;
  // Per container: the planned devices swapped between two containers is a difference.
  SetPods({PodOnNode{.uid = "u-swap", .ns = "ml", .name = "swap", .phase = "Running",
                     .devices_annotation = json{{"c1", {Gpu(0)}}, {"c2", {Gpu(1)}}}.dump()}});
  v1::PodResources swapped = fake_kubelet::FakePodResources::MakePod("ml", "swap", "c1", "nvidia.com/gpu", {Gpu(1)});
  *swapped.add_containers() =
      fake_kubelet::FakePodResources::MakePod("ml", "swap", "c2", "nvidia.com/gpu", {Gpu(0)}).containers(0);
  fake_pr_->SetPods({swapped});
  ASSERT_TRUE(p.PublishOnce().ok());
  text = registry.Expose();
  EXPECT_NE(text.find(series + " 3"), std::string::npos) << text;
  // Each container with its own plan: no difference.
  SetPods({PodOnNode{.uid = "u-right", .ns = "ml", .name = "right", .phase = "Running",
                     .devices_annotation = json{{"c1", {Gpu(2)}}, {"c2", {Gpu(3)}}}.dump()}});
  v1::PodResources right = fake_kubelet::FakePodResources::MakePod("ml", "right", "c1", "nvidia.com/gpu", {Gpu(2)});
  *right.add_containers() =
      fake_kubelet::FakePodResources::MakePod("ml", "right", "c2", "nvidia.com/gpu", {Gpu(3)}).containers(0);
  fake_pr_->SetPods({right});
  ASSERT_TRUE(p.PublishOnce().ok());
  text = registry.Expose();
  EXPECT_NE(text.find(series + " 3"), std::string::npos) << text;
}

}  // namespace
}  // namespace phalanx::device_plugin

namespace phalanx::device_plugin {
namespace {

TEST(NodeStateTest, GpuStateCarriesUtilisationPerPhysicalDeviceAsAdditiveFields) {
  auto node = topology::MakePcie4GpuNode();
  std::vector<ResourceSpec> resources = {testing::WholeGpuResource(node)};
  HealthTable health;
  const std::string g0 = node.gpus[0].uuid.str(), g1 = node.gpus[1].uuid.str();
  UsageSummaries usage = {{g0, {.sm_util_5m = 42, .memory_used_mib = 1024}}, {g1, {.memory_used_mib = 0}}};
  json doc = GpuStateDocument(resources, health, {}, usage);
  EXPECT_EQ(doc["version"], 1);
  EXPECT_EQ(doc["devices"][g0]["smUtil5m"], 42.0);
  EXPECT_EQ(doc["devices"][g0]["memUsedMiB"], 1024);
  EXPECT_FALSE(doc["devices"][g1].contains("smUtil5m"));  // not measured: absent, never 0
  EXPECT_EQ(doc["devices"][g1]["memUsedMiB"], 0);
  EXPECT_FALSE(doc["devices"][node.gpus[2].uuid.str()].contains("memUsedMiB"));
  EXPECT_EQ(doc["devices"][g0]["health"], "Healthy");  // the version-1 fields are unchanged
}

TEST(DecodePodTest, ReadsAttributionLabelsTierAndIdleSince) {
  auto p = DecodePod(json::parse(R"({"metadata":{"uid":"u1","namespace":"ml","name":"w0",
      "labels":{"phalanx.io/gang":"llm-a0","phalanx.io/job-name":"llm"},
      "annotations":{"phalanx.io/idle-since":"2026-11-26T14:00:00Z"}},
    "spec":{"priorityClassName":"phalanx-spot","containers":[]}})"));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->gang, "llm-a0");
  EXPECT_EQ(p->job, "llm");
  EXPECT_EQ(p->priority_class, "phalanx-spot");
  EXPECT_EQ(p->idle_since, "2026-11-26T14:00:00Z");
  auto alias = DecodePod(json::parse(R"({"metadata":{"uid":"u2","name":"x",
      "labels":{"scheduling.x-k8s.io/pod-group":"pg"}}})"));
  ASSERT_TRUE(alias.ok());
  EXPECT_EQ(alias->gang, "pg");
}

// Utilisation reaches the Node only when a rounded value moved, through the same debounced,
// changed-parts-only write.
TEST_F(PublisherTest, UtilisationIsWrittenOnlyWhenTheRoundedSummaryChanges) {
  std::mutex mu;
  auto current = std::make_shared<const UsageSummaries>();
  publisher_ = std::make_unique<Publisher>(
      PublisherOptions{.node_name = "node-1", .interval = 1000ms, .usage = [&] {
                         std::lock_guard<std::mutex> lock(mu);
                         return current;
                       }},
      api_, pods_, client_.get(), node_, false, resources_, health_, nullptr, log::MakeLogger("test"));
  auto set = [&](UsageSummaries u) {
    std::lock_guard<std::mutex> lock(mu);
    current = std::make_shared<const UsageSummaries>(std::move(u));
  };
  ASSERT_TRUE(publisher_->PublishOnce().ok());
  EXPECT_EQ(publisher_->writes(), 1);
  set({{Gpu(0), {.sm_util_5m = 42, .memory_used_mib = 100}}});
  ASSERT_TRUE(publisher_->PublishOnce().ok());
  EXPECT_EQ(publisher_->writes(), 2);
  EXPECT_EQ(LastState()["devices"][Gpu(0)]["smUtil5m"], 42.0);
  EXPECT_FALSE(LastPatch()["metadata"].contains("labels"));  // only the state changed
  set({{Gpu(0), {.sm_util_5m = 42, .memory_used_mib = 100}}});  // same rounded values
  ASSERT_TRUE(publisher_->PublishOnce().ok());
  EXPECT_EQ(publisher_->writes(), 2);
}

}  // namespace
}  // namespace phalanx::device_plugin
