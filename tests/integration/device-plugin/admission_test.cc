// The real daemon against a fake kubelet that behaves like kubelet v1.26 (tests/fakes/kubelet:
// pods admitted one at a time in the order its watch delivers them, GetPreferredAllocation then
// Allocate per container, device-plugins/ cleaned on start) and the fake API server: each pod and
// container gets the devices the extender planned (phalanx.io/devices), plans that cannot be
// honoured are reported on the pod, one instance per node survives a kubelet restart, and a
// 16-member gang bound in parallel gets its plan 100 times out of 100.
#include <algorithm>
#include <future>
#include <random>

#include "tests/fakes/kubelet/test_device_plugin.h"
#include "tests/integration/device-plugin/node_fixture.h"
#include "tests/integration/device-plugin/plugin_fixture.h"

namespace phalanx::device_plugin::testing {
namespace {

using namespace std::chrono_literals;
using fakes::apiserver::FakeApiServer;
using json::Json;

constexpr const char* kPcie[] = {"GPU-349a23a6-dc97-50d5-b014-908d58b8b10b", "GPU-6e10a733-a00b-5c95-81e9-d4a9649072ea",
                                 "GPU-a1930b48-810e-5cd8-a1d2-010b872b6d9e", "GPU-4ce6687a-0c69-5492-84a4-cdc1a1305a07"};
constexpr const char* kH100[] = {"GPU-fb1b0cfb-f30b-5c3c-a915-4f34ba037e89", "GPU-157d1963-7841-517e-90a1-212b5b462d0a",
                                 "GPU-3d6d8985-109d-55f1-9189-0830cd406f15", "GPU-8f138279-e839-5131-9a35-d32537df8e6b",
                                 "GPU-a0539fe9-208e-545a-aa1e-008482183651", "GPU-19044d85-f501-53d3-b443-cdceabe92bcb",
                                 "GPU-d101e2ea-dd27-59eb-bdd1-4bb8a6686616", "GPU-4313f848-6546-570f-b1f3-01e293d91ccc"};

using Plan = std::map<std::string, std::vector<std::string>>;

class AdmissionTest : public PluginTest {
 protected:
  void SetUp() override {
    PluginTest::SetUp();
    auto started = FakeApiServer::Start();
    ASSERT_TRUE(started.ok()) << started.status();
    api_ = std::move(started).value();
    ASSERT_TRUE(api_->Create("namespaces", Json{{"metadata", {{"name", "ml"}}}}).ok());
    ASSERT_TRUE(api_->WriteKubeconfig(Path("kubeconfig")).ok());
    client_ = ClientFor(*api_);
    ASSERT_NE(client_, nullptr);
  }
  void TearDown() override {
    nodes_.clear();  // daemons first: they must not outlive the API server
    PluginTest::TearDown();
    client_.reset();
    api_.reset();
  }
  GpuNode& AddNode(const std::string& name, const std::string& machine) {
    nodes_.push_back(std::make_unique<GpuNode>(name, Path(name), *api_, *client_));
    GpuNode& n = *nodes_.back();
    auto& d = n.Start(machine, Path("kubeconfig"));
    EXPECT_TRUE(n.kubelet().WaitForRegistrations(1, kDeadline)) << d.log();
    EXPECT_TRUE(api_->WaitFor("nodes", "", name, [](const Json& node) {
                      return node["metadata"].contains("annotations") &&
                             node["metadata"]["annotations"].contains("phalanx.io/gpu-state");
                    }).ok())
        << d.log();
    // Kubelet has the plugin's devices (ListAndWatch) once it posts them allocatable; a pod that
    // arrives before that is rejected (UnexpectedAdmissionError), by a real kubelet too.
    EXPECT_TRUE(api_->WaitFor("nodes", "", name, [](const Json& node) {
                      if (!node.contains("status") || !node["status"].contains("allocatable")) return false;
                      for (const auto& [resource, amount] : node["status"]["allocatable"].items()) {
                        if (resource.rfind("nvidia.com/", 0) == 0 && amount.is_string() && amount != "0") return true;
                      }
                      return false;
                    }).ok())
        << d.log();
    return n;
  }
  bool HasPodEvent(const std::string& pod, const std::string& reason, const std::string& note_part) {
    auto events = api_->List("events.events.k8s.io", "ml");
    if (!events.ok()) return false;
    for (const auto& e : *events) {
      if (e.value("reason", "") == reason && e["regarding"].value("name", "") == pod &&
          e.value("note", "").find(note_part) != std::string::npos) {
        return true;
      }
    }
    return false;
  }

  std::unique_ptr<FakeApiServer> api_;
  std::unique_ptr<kube::KubeClient> client_;
  std::vector<std::unique_ptr<GpuNode>> nodes_;
};

// Issue 24 §1: two pods bound to one node in the same second. Kubelet admits the one that
// arrived first first; each gets its own plan (before: ordered by creationTimestamp, ties by
// name, the two swapped GPUs).
TEST_F(AdmissionTest, PodsBoundInTheSameSecondGetTheirOwnPlannedGpus) {
  GpuNode& n = AddNode("node-1", "pcie-4gpu");
  for (int attempt = 0;; ++attempt) {
    ASSERT_LT(attempt, 5) << "could not create two pods within one second";
    const std::string first = "rz-first-" + std::to_string(attempt), second = "ra-second-" + std::to_string(attempt);
    // Kubelet is busy while both arrive (the plugin's watch has both before the first admission).
    n.node().Hold();
    auto a = api_->Create("pods", GpuPod(first, "node-1", {{"main", 1}}, Json{{"main", {kPcie[3]}}}.dump()));
    auto b = api_->Create("pods", GpuPod(second, "node-1", {{"main", 1}}, Json{{"main", {kPcie[0]}}}.dump()));
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_TRUE(WaitUntil([&] { return n.node().queued() == 2; }));
    std::this_thread::sleep_for(200ms);  // the plugin's watch, a few ms behind kubelet's
    n.node().Release();
    ASSERT_TRUE(n.node().WaitForAdmissions(2 * (attempt + 1), kDeadline));
    if ((*a)["metadata"]["creationTimestamp"] != (*b)["metadata"]["creationTimestamp"]) {
      ASSERT_TRUE(api_->Delete("pods", "ml", first, {.grace_period_seconds = 0}).ok());
      ASSERT_TRUE(api_->Delete("pods", "ml", second, {.grace_period_seconds = 0}).ok());
      ASSERT_TRUE(WaitUntil([&] { return n.kubelet().devices().admitted().empty(); }));
      continue;
    }
    EXPECT_EQ(n.node().admission_order(), (std::vector<std::string>{"ml/" + first, "ml/" + second}));
    EXPECT_EQ(n.Allocated(first), (Plan{{"main", {kPcie[3]}}})) << n.daemon().log();
    EXPECT_EQ(n.Allocated(second), (Plan{{"main", {kPcie[0]}}})) << n.daemon().log();
    break;
  }
}

// Issue 24 §2: a pod with GPUs in two containers gets the per-container plan exactly (before:
// the plan was flattened and both containers fell back to the topology choice).
TEST_F(AdmissionTest, EachContainerGetsItsPlannedGpus) {
  GpuNode& n = AddNode("node-1", "pcie-4gpu");
  ASSERT_TRUE(api_->Create("pods", GpuPod("multi", "node-1", {{"c1", 1}, {"c2", 1}},
                                          Json{{"c1", {kPcie[3]}}, {"c2", {kPcie[1]}}}.dump()))
                  .ok());
  ASSERT_TRUE(n.node().WaitForAdmissions(1, kDeadline));
  EXPECT_EQ(n.Allocated("multi"), (Plan{{"c1", {kPcie[3]}}, {"c2", {kPcie[1]}}})) << n.daemon().log();
  // Kubelet's sequence: per container, GetPreferredAllocation then Allocate.
  std::vector<std::string> seq;
  for (const auto& c : n.kubelet().devices().calls()) seq.push_back(c.container + ":" + c.method);
  EXPECT_EQ(seq, (std::vector<std::string>{"c1:GetPreferredAllocation", "c1:Allocate", "c2:GetPreferredAllocation",
                                           "c2:Allocate"}));
}

// A plan that cannot be honoured (here: two GPUs planned for a one-GPU gang member) is said on
// the pod (Event) and counted, and the member gets GPUs no other pod is planned to get.
TEST_F(AdmissionTest, MissedPlansAreReportedOnThePod) {
  GpuNode& n = AddNode("node-1", "pcie-4gpu");
  ASSERT_TRUE(api_->Create("pods", GpuPod("g-0", "node-1", {{"main", 1}},
                                          Json{{"main", {kPcie[2], kPcie[3]}}}.dump(), "g"))
                  .ok());
  ASSERT_TRUE(n.node().WaitForAdmissions(1, kDeadline));
  ASSERT_TRUE(WaitUntil([&] { return HasPodEvent("g-0", "GpuPlanNotHonoured", "gang member"); })) << n.daemon().log();
  const std::string metrics = HttpGet(n.daemon().MetricsPort(), "/metrics");
  EXPECT_NE(metrics.find(R"(phalanx_device_plugin_plan_misses_total{resource="nvidia.com/gpu",reason="size"} 1)"),
            std::string::npos)
      << metrics;
}

// Issue 24 §4: with the node's own identity Events are refused; the daemon says so once, at
// warning level, naming the missing permission, and keeps serving. §5: no "Failed to publish"
// at start while the pod list is not in yet.
TEST_F(AdmissionTest, RefusedEventsAreLoggedOnceWithThePermissionAndStartIsQuiet) {
  api_->FailNext({.verb = "create", .path_contains = "/events", .code = 403, .count = 1000,
                  .message = "events.events.k8s.io is forbidden: User \"system:node:node-1\" cannot create resource"});
  GpuNode& n = AddNode("node-1", "pcie-4gpu");
  const auto warning = "grant create on events.events.k8s.io in namespace default";
  ASSERT_TRUE(WaitUntil([&] { return n.daemon().log().find(warning) != std::string::npos; })) << n.daemon().log();
  ASSERT_TRUE(api_->Create("pods", GpuPod("w", "node-1", {{"main", 1}}, Json{{"main", {kPcie[2]}}}.dump())).ok());
  ASSERT_TRUE(n.node().WaitForAdmissions(1, kDeadline));
  EXPECT_EQ(n.Allocated("w"), (Plan{{"main", {kPcie[2]}}}));
  const std::string log = n.daemon().log();
  EXPECT_EQ(log.find(warning), log.rfind(warning)) << log;
  EXPECT_EQ(log.find("Failed to publish node GPU state"), std::string::npos) << log;
}

// Issue 24 §4: a kubelet whose first status after a restart goes out before the plugin registered
// again reports the resource as 0 (its checkpoint knows the resource, no device is healthy yet);
// the plugin's registration brings it back.
TEST_F(AdmissionTest, KubeletRestartPostsZeroUntilThePluginRegistersAgain) {
  GpuNode& n = AddNode("node-1", "pcie-4gpu");
  const auto allocatable = [&] {
    auto node = api_->Get("nodes", "", "node-1");
    if (!node.ok() || !node->contains("status") || !(*node)["status"].contains("allocatable")) return std::string();
    return (*node)["status"]["allocatable"].value("nvidia.com/gpu", "");
  };
  ASSERT_TRUE(WaitUntil([&] { return allocatable() == "4"; })) << allocatable();
  n.daemon().Signal(SIGSTOP);  // the plugin is slower than kubelet's first status
  ASSERT_TRUE(n.kubelet().Restart().ok());
  EXPECT_TRUE(WaitUntil([&] { return allocatable() == "0"; })) << allocatable();
  n.daemon().Signal(SIGCONT);
  EXPECT_TRUE(WaitUntil([&] { return allocatable() == "4"; })) << allocatable() << n.daemon().log();
}

// Issue 24 §3: kubelet deletes every file in device-plugins/ when it starts. The lock is not
// there, so a second instance still finds it held and exits (before: it registered in the
// first one's place).
TEST_F(PluginTest, SecondInstanceExitsAfterKubeletCleanedItsDirectory) {
  StartKubelet();
  auto& first = StartDaemon("pcie-4gpu");
  ASSERT_TRUE(kubelet_->WaitForRegistrations(1, kDeadline)) << first.log();
  ASSERT_TRUE(kubelet_->Restart().ok());
  ASSERT_TRUE(kubelet_->WaitForRegistrations(1, kDeadline)) << first.log();
  DaemonProcess second({"--kubelet-dir", KubeletDir(), "--nvml-library", FAKE_NVML_LIBRARY, "--metrics-addr",
                        "127.0.0.1:0", "--publish=false"},
                       {{"FAKE_NVML_MACHINE", Machine("pcie-4gpu")}}, Path("second.log"));
  EXPECT_EQ(second.WaitExit(), 1) << second.log();
  EXPECT_NE(second.log().find("another phalanx-device-plugin"), std::string::npos) << second.log();
  EXPECT_TRUE(first.running());
}

// Issue 24 §3: another process binds our socket path (kubelet now talks to it): the plugin
// notices, serves and registers again, and kubelet is connected to it once more.
TEST_F(PluginTest, ReplacedSocketIsNoticedAndRegisteredAgain) {
  StartKubelet();
  auto& d = StartDaemon("pcie-4gpu");
  ASSERT_TRUE(kubelet_->WaitForRegistrations(1, kDeadline)) << d.log();
  const std::string socket = PluginDir() + "/phalanx-nvidia.com-gpu.sock";
  ASSERT_TRUE(std::filesystem::exists(socket)) << d.log();
  {
    std::filesystem::remove(socket);
    fake_kubelet::TestDevicePlugin impostor(socket, {fake_kubelet::MakeDevice("GPU-impostor", "Healthy", 0)});
    ASSERT_TRUE(impostor.serving());
    ASSERT_TRUE(impostor.Register(kubelet_->registration_socket(), "v1beta1", "nvidia.com/gpu").ok());
    ASSERT_TRUE(kubelet_->WaitForRegistrations(3, kDeadline)) << d.log();  // the impostor's, then ours again
  }
  auto* p = Plugin("nvidia.com/gpu");
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(p->WaitForDevices([](const Devices& ds) { return ds.size() == 4; }, kDeadline)) << d.log();
  EXPECT_NE(d.log().find("replaced by another process"), std::string::npos) << d.log();
}

// Issue 24 deliverable: a 16-member gang, 8 members per node, annotated then bound in parallel
// the way the extender's commit does it (every phalanx.io/devices patch, then every Binding, all
// concurrently); each kubelet admits in the order its watch delivers. Every member gets exactly
// its planned GPU, 100 repetitions out of 100.
TEST_F(AdmissionTest, ParallelBoundGangGetsItsPlanEveryTime) {
  GpuNode& n1 = AddNode("node-1", "dgx-h100");
  GpuNode& n2 = AddNode("node-2", "dgx-h100");
  std::mt19937 rng(24);
  constexpr int kRepetitions = 100;
  constexpr int kMembers = 16;
  int swaps = 0;
  for (int rep = 0; rep < kRepetitions; ++rep) {
    // The plan: member i on node i/8, a shuffled GPU per member.
    std::vector<int> gpu(kMembers);
    for (int i = 0; i < kMembers; ++i) gpu[i] = i % 8;
    std::shuffle(gpu.begin(), gpu.begin() + 8, rng);
    std::shuffle(gpu.begin() + 8, gpu.end(), rng);
    std::vector<std::string> names(kMembers), uids(kMembers);
    for (int i = 0; i < kMembers; ++i) {
      names[i] = "g" + std::to_string(rep) + "-" + std::to_string(i);
      auto created = api_->Create("pods", GpuPod(names[i], "", {{"main", 1}}, "", "gang-" + std::to_string(rep)));
      ASSERT_TRUE(created.ok()) << created.status();
      uids[i] = (*created)["metadata"]["uid"];
    }
    const auto fan_out = [&](const std::function<Status(int)>& write) {
      std::vector<std::future<Status>> done;
      for (int i = 0; i < kMembers; ++i) done.push_back(std::async(std::launch::async, write, i));
      for (auto& f : done) ASSERT_TRUE(f.get().ok());
    };
    fan_out([&](int i) {
      const Json patch = {{"metadata", {{"annotations", {{"phalanx.io/devices", Json{{"main", {kH100[gpu[i]]}}}.dump()}}}}}};
      return client_->Patch(kube::resources::kPods, "ml", names[i], kube::PatchType::kMerge, patch).status();
    });
    fan_out([&](int i) { return client_->Bind("ml", names[i], i < 8 ? "node-1" : "node-2", uids[i]); });
    ASSERT_TRUE(n1.node().WaitForAdmissions(8 * (rep + 1), kDeadline));
    ASSERT_TRUE(n2.node().WaitForAdmissions(8 * (rep + 1), kDeadline));
    for (int i = 0; i < kMembers; ++i) {
      const auto got = (i < 8 ? n1 : n2).Allocated(names[i]);
      if (got != Plan{{"main", {kH100[gpu[i]]}}}) {
        ++swaps;
        ADD_FAILURE() << "repetition " << rep << ": " << names[i] << " planned " << kH100[gpu[i]] << ", got "
                      << (got.count("main") ? got.at("main")[0] : "nothing");
      }
    }
    ASSERT_EQ(swaps, 0) << n1.daemon().log();
    fan_out([&](int i) {
      kube::DeleteOptions now;
      now.grace_period_seconds = 0;
      return client_->Delete(kube::resources::kPods, "ml", names[i], now).status();
    });
    ASSERT_TRUE(WaitUntil([&] {
      return n1.kubelet().devices().admitted().empty() && n2.kubelet().devices().admitted().empty();
    }));
  }
}

}  // namespace
}  // namespace phalanx::device_plugin::testing
