// The real daemon's utilisation sampling against the fake NVML curves (pcie-4gpu-utilisation:
// GPU 0 at 3 %, GPU 1 at 60 %), the fake kubelet's pod-resources and the fake API server, with
// short windows (flags in seconds): an idle pod gets phalanx.io/idle-since and a GpuIdle Event, a
// busy one does not; a stale annotation on a busy pod is removed with GpuActive; attribution
// follows a replaced pod; /metrics and phalanx.io/gpu-state carry the numbers; unsupported NVML
// queries degrade to "not measured" without touching health; bad flags are refused by name.
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

constexpr const char* kGpu0 = "GPU-349a23a6-dc97-50d5-b014-908d58b8b10b";  // 3 %
constexpr const char* kGpu1 = "GPU-6e10a733-a00b-5c95-81e9-d4a9649072ea";  // 60 %

Json Pod(const std::string& name, const std::string& idle_since = "") {
  Json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata",
               {{"name", name},
                {"namespace", "ml"},
                {"labels", {{"phalanx.io/job-name", "llm"}, {"phalanx.io/gang", "llm-a0"}}}}},
              {"spec",
               {{"nodeName", "node-1"},
                {"priorityClassName", "phalanx-spot"},
                {"containers", Json::array({{{"name", "main"},
                                             {"image", "trainer"},
                                             {"resources", {{"limits", {{"nvidia.com/gpu", "1"}}}}}}})}}},
              {"status", {{"phase", "Running"}}}};
  if (!idle_since.empty()) pod["metadata"]["annotations"] = {{"phalanx.io/idle-since", idle_since}};
  return pod;
}

class UtilisationTest : public PluginTest {
 protected:
  void SetUp() override {
    PluginTest::SetUp();
    auto started = FakeApiServer::Start({});
    ASSERT_TRUE(started.ok()) << started.status();
    api_ = std::move(started).value();
    ASSERT_TRUE(api_->Create("nodes", Json{{"metadata", {{"name", "node-1"}}}}).ok());
    ASSERT_TRUE(api_->Create("namespaces", Json{{"metadata", {{"name", "ml"}}}}).ok());
    ASSERT_TRUE(api_->WriteKubeconfig(Path("kubeconfig")).ok());
    publish_ = true;
  }
  void TearDown() override {
    PluginTest::TearDown();
    api_.reset();
  }
  DaemonProcess& Start(std::map<std::string, std::string> env = {}) {
    return StartDaemon("pcie-4gpu-utilisation",
                       {"--kubeconfig", Path("kubeconfig"), "--utilisation-interval", "0.2", "--idle-window", "2"},
                       std::move(env));
  }
  // Kubelet's view: which pod holds which GPU.
  void Hold(std::vector<std::pair<std::string, std::string>> pod_gpu) {
    std::vector<v1::PodResources> pods;
    for (const auto& [pod, gpu] : pod_gpu) {
      pods.push_back(fake_kubelet::FakePodResources::MakePod("ml", pod, "main", "nvidia.com/gpu", {gpu}));
    }
    kubelet_->pod_resources().SetPods(std::move(pods));
  }
  bool HasPodEvent(const std::string& pod, const std::string& reason) {
    auto events = api_->List("events.events.k8s.io", "ml");
    if (!events.ok()) return false;
    for (const auto& e : *events) {
      if (e.value("reason", "") == reason && e["regarding"].value("name", "") == pod &&
          e["regarding"].value("kind", "") == "Pod") {
        return true;
      }
    }
    return false;
  }

  std::unique_ptr<FakeApiServer> api_;
};

TEST_F(UtilisationTest, FlagsTheIdlePodNotTheBusyOneAndPublishesTheNumbers) {
  StartKubelet();
  ASSERT_TRUE(api_->Create("pods", Pod("idle")).ok());
  ASSERT_TRUE(api_->Create("pods", Pod("busy")).ok());
  Hold({{"idle", kGpu0}, {"busy", kGpu1}});
  auto& d = Start();
  ASSERT_TRUE(kubelet_->WaitForRegistrations(1, kDeadline)) << d.log();

  auto flagged = api_->WaitFor("pods", "ml", "idle", [](const Json& p) {
    return !Annotation(p, "phalanx.io/idle-since").empty();
  }, 60s);
  ASSERT_TRUE(flagged.ok()) << flagged.status() << d.log();
  EXPECT_EQ(Annotation(*flagged, "phalanx.io/idle-since").size(), 20u);  // 2026-11-26T14:00:00Z
  ASSERT_TRUE(WaitUntil([&] { return HasPodEvent("idle", "GpuIdle"); }, 60s)) << d.log();
  auto busy = api_->Get("pods", "ml", "busy");
  ASSERT_TRUE(busy.ok());
  EXPECT_EQ(Annotation(*busy, "phalanx.io/idle-since"), "");
  EXPECT_FALSE(HasPodEvent("busy", "GpuIdle"));

  const int port = d.MetricsPort();
  std::string metrics;
  ASSERT_TRUE(WaitUntil([&] {
    metrics = HttpGet(port, "/metrics");
    return metrics.find("phalanx_gpu_idle{node=\"node-1\",gpu=\"" + std::string(kGpu0) +
                        "\",pod=\"idle\",namespace=\"ml\",container=\"main\",job=\"llm\",gang=\"llm-a0\","
                        "tier=\"phalanx-spot\"} 1\n") != std::string::npos;
  })) << metrics;
  EXPECT_NE(metrics.find("phalanx_gpu_sm_utilisation{node=\"node-1\",gpu=\"" + std::string(kGpu1) +
                         "\",pod=\"busy\",namespace=\"ml\",container=\"main\",job=\"llm\",gang=\"llm-a0\","
                         "tier=\"phalanx-spot\"} 60\n"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("phalanx_gpu_memory_used_bytes{node=\"node-1\",gpu=\"" + std::string(kGpu1)),
            std::string::npos);
  EXPECT_NE(metrics.find("phalanx_gpu_power_watts{"), std::string::npos);
  EXPECT_NE(metrics.find("phalanx_device_plugin_idle_patches_total{result=\"ok\"}"), std::string::npos);

  // The node summary for the extender and operator, version 1 with additive fields.
  auto node = api_->WaitFor("nodes", "", "node-1", [](const Json& n) {
    auto s = Annotation(n, "phalanx.io/gpu-state");
    return s.find("smUtil5m") != std::string::npos;
  });
  ASSERT_TRUE(node.ok()) << node.status() << d.log();
  const Json state = Json::parse(Annotation(*node, "phalanx.io/gpu-state"));
  EXPECT_EQ(state["version"], 1);
  EXPECT_EQ(state["devices"][kGpu1]["smUtil5m"], 60.0);
  EXPECT_EQ(state["devices"][kGpu1]["memUsedMiB"], 30000);
  EXPECT_EQ(state["devices"][kGpu0]["smUtil5m"], 3.0);

  // The job restarts: the idle pod is replaced by a new pod on the same GPU.
  ASSERT_TRUE(api_->Delete("pods", "ml", "idle", {.grace_period_seconds = 0}).ok());
  ASSERT_TRUE(api_->Create("pods", Pod("idle-2")).ok());
  Hold({{"idle-2", kGpu0}, {"busy", kGpu1}});
  ASSERT_TRUE(WaitUntil([&] {
    metrics = HttpGet(port, "/metrics");
    return metrics.find("pod=\"idle-2\"") != std::string::npos && metrics.find("pod=\"idle\"") == std::string::npos;
  })) << metrics;
  auto flagged2 = api_->WaitFor("pods", "ml", "idle-2", [](const Json& p) {
    return !Annotation(p, "phalanx.io/idle-since").empty();
  }, 60s);
  EXPECT_TRUE(flagged2.ok()) << flagged2.status() << d.log();

  // Sampling never touched health.
  auto* p = Plugin("nvidia.com/gpu");
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(p->WaitForDevices([](const Devices& ds) { return CountHealth(ds, "Healthy") == 4; }, kDeadline));
}

TEST_F(UtilisationTest, AStaleIdleAnnotationOnABusyPodIsRemovedWithGpuActive) {
  StartKubelet();
  ASSERT_TRUE(api_->Create("pods", Pod("busy", "2026-11-01T00:00:00Z")).ok());
  Hold({{"busy", kGpu1}});
  auto& d = Start();
  auto cleared = api_->WaitFor("pods", "ml", "busy", [](const Json& p) {
    return Annotation(p, "phalanx.io/idle-since").empty();
  }, 60s);
  ASSERT_TRUE(cleared.ok()) << cleared.status() << d.log();
  EXPECT_TRUE(WaitUntil([&] { return HasPodEvent("busy", "GpuActive"); }, 60s)) << d.log();
}

TEST_F(UtilisationTest, UnsupportedUtilisationDegradesToNotMeasuredAndIsLoggedOncePerDevice) {
  StartKubelet();
  ASSERT_TRUE(api_->Create("pods", Pod("idle")).ok());
  Hold({{"idle", kGpu0}});
  auto& d = Start({{"FAKE_NVML_UNSUPPORTED", "nvmlDeviceGetUtilizationRates,nvmlDeviceGetProcessUtilization"}});
  ASSERT_TRUE(kubelet_->WaitForRegistrations(1, kDeadline)) << d.log();
  const int port = d.MetricsPort();
  // Many passes and three idle windows later: memory is still measured, no idle verdict.
  ASSERT_TRUE(WaitUntil([&] {
    return HttpGet(port, "/metrics").find("phalanx_device_plugin_utilisation_samples_total 30") != std::string::npos;
  }, 60s)) << HttpGet(port, "/metrics");
  std::this_thread::sleep_for(6s);  // > 2 idle windows: enough for a wrong verdict to show up
  const std::string metrics = HttpGet(port, "/metrics");
  EXPECT_EQ(metrics.find("phalanx_gpu_sm_utilisation{"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("phalanx_gpu_memory_used_bytes{node=\"node-1\",gpu=\"" + std::string(kGpu0)),
            std::string::npos);
  EXPECT_NE(metrics.find("phalanx_gpu_idle{node=\"node-1\",gpu=\"" + std::string(kGpu0) + "\",pod=\"idle\""),
            std::string::npos);
  EXPECT_NE(metrics.find("} 0\n", metrics.find("phalanx_gpu_idle{")), std::string::npos);
  auto pod = api_->Get("pods", "ml", "idle");
  ASSERT_TRUE(pod.ok());
  EXPECT_EQ(Annotation(*pod, "phalanx.io/idle-since"), "");
  // One log line per device and query, not one per pass.
  const std::string log = d.log();
  size_t lines = 0;
  for (size_t at = 0; (at = log.find("not asking it again", at)) != std::string::npos; ++at) ++lines;
  EXPECT_EQ(lines, 12u) << log;  // 4 GPUs x (2 queries + GPM, which these GPUs lack)
  EXPECT_TRUE(WaitUntil([&] { return HttpGet(port, "/readyz").rfind("200", 0) == 0; })) << HttpGet(port, "/readyz");
  auto* p = Plugin("nvidia.com/gpu");
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(p->WaitForDevices([](const Devices& ds) { return CountHealth(ds, "Healthy") == 4; }, kDeadline));
}

TEST_F(UtilisationTest, BadUtilisationFlagsAreRefusedByName) {
  publish_ = false;
  struct Case {
    std::vector<std::string> flags;
    std::string message;
  };
  const Case cases[] = {
      {{"--idle-threshold-percent", "0"}, "--idle-threshold-percent: must be above 0"},
      {{"--idle-threshold-percent", "101"}, "--idle-threshold-percent"},
      {{"--utilisation-interval", "-1"}, "--utilisation-interval: must be 0 (off)"},
      {{"--utilisation-interval", "30", "--idle-window", "10"}, "--idle-window: must be at least --utilisation-interval"},
  };
  for (const auto& c : cases) {
    auto& d = StartDaemon("pcie-4gpu-utilisation", c.flags);
    EXPECT_EQ(d.WaitExit(), std::optional<int>(2)) << d.log();
    EXPECT_NE(d.log().find(c.message), std::string::npos) << d.log();
  }
}

}  // namespace
}  // namespace phalanx::device_plugin::testing
