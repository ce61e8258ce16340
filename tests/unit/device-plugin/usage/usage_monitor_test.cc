// UsageMonitor end to end in-process: fake NVML curves, fake pod-resources, the PodCache and an
// in-memory API, on a fake clock (10 s passes over a 30-minute window in milliseconds).
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/log/logger_factory.h"
#include "core/metrics/registry.h"
#include "device-plugin/nvml/gpu_discovery.h"
#include "device-plugin/nvml/nvml_session.h"
#include "device-plugin/usage/usage_monitor.h"
#include "tests/fakes/clock/fake_clock.h"
#include "tests/fakes/kubelet/fake_pod_resources.h"
#include "tests/unit/device-plugin/nvml/fake_nvml_fixture.h"

namespace phalanx::device_plugin {
namespace {

using namespace std::chrono_literals;
using fake_kubelet::FakePodResources;
using nlohmann::json;

// Applies pod patches to the PodCache, as the watch would deliver them.
class FakeApi final : public NodeApi {
 public:
  explicit FakeApi(PodCache& pods) : pods_(pods) {}
  Status PatchNode(const std::string&, const json&) override { return OkStatus(); }
  Status PatchPod(const std::string& ns, const std::string& name, const json& patch) override {
    if (fail_next) {
      fail_next = false;
      return UnavailableError("API server down");
    }
    patches.push_back({ns + "/" + name, patch});
    for (const auto& p : *pods_.Pods()) {
      if (p.ns != ns || p.name != name) continue;
      PodOnNode copy = p;
      const json& v = patch["metadata"]["annotations"]["phalanx.io/idle-since"];
      copy.idle_since = v.is_null() ? "" : v.get<std::string>();
      pods_.Put(copy);
    }
    return OkStatus();
  }
  std::vector<std::pair<std::string, json>> patches;
  bool fail_next = false;

 private:
  PodCache& pods_;
};

class UsageMonitorTest : public nvml::testing::FakeNvmlTest {
 protected:
  void SetUp() override {
    FakeNvmlTest::SetUp();
    SetEnv("FAKE_NVML_MACHINE", MachineFile());
    nvml_ = LoadFake();
    ASSERT_NE(nvml_, nullptr);
    session_ = nvml::NvmlSession::Open(*nvml_).value();
    inventory_ = nvml::DiscoverGpus(*nvml_).value();
    auto pr = FakePodResources::Start(TempDir() + "/kubelet.sock");
    ASSERT_TRUE(pr.ok()) << pr.status();
    pod_resources_ = std::move(pr).value();
    client_ = std::make_unique<PodResourcesClient>(TempDir() + "/kubelet.sock");
    pods_.SetSynced();
    counters_ = UsageCounters::Register(registry_).value();
    monitor_ = std::make_unique<UsageMonitor>(
        UsageMonitorOptions{.node_name = "node-1", .interval = 10s, .idle = {.threshold_percent = 5, .window = 30min}},
        *nvml_, inventory_,
        UsageMonitorDeps{.pod_resources = client_.get(), .pods = &pods_, .api = &api_, .counters = &counters_},
        log::MakeLogger("test"), clock_);
  }
  void TearDown() override {
    monitor_.reset();
    pod_resources_.reset();
    FakeNvmlTest::TearDown();
  }
  virtual std::string MachineFile() { return MachinePath("pcie-4gpu-utilisation.json"); }
  std::string Gpu(int i) const { return inventory_.gpus[i].uuid.str(); }
  void AddPod(const std::string& name, const std::string& uid, int gpu, const std::string& idle_since = "") {
    AddPodOn(name, uid, Gpu(gpu), idle_since);
  }
  void AddPodOn(const std::string& name, const std::string& uid, const std::string& device,
                const std::string& idle_since = "") {
    pods_.Put(PodOnNode{.uid = uid, .ns = "ml", .name = name, .phase = "Running", .gang = name + "-a0",
                        .job = "job-" + name, .priority_class = "phalanx-spot", .idle_since = idle_since});
    const std::string resource = device.rfind("MIG-", 0) == 0 ? "nvidia.com/mig-1g.10gb" : "nvidia.com/gpu";
    held_.push_back(FakePodResources::MakePod("ml", name, "main", resource, {device}));
    pod_resources_->SetPods(held_);
  }
  void RemovePod(const std::string& name) {
    pods_.Remove("ml", name);
    std::erase_if(held_, [&](const auto& p) { return p.name() == name; });
    pod_resources_->SetPods(held_);
  }
  // Passes every 10 s of fake time for `span`.
  void Run(std::chrono::seconds span) {
    for (auto t = 0s; t < span; t += 10s) {
      clock_.Advance(10s);
      monitor_->SampleOnce();
    }
  }
  const Holder* HolderOf(int gpu) {
    snapshot_ = monitor_->Snapshot();
    const auto& holders = snapshot_->devices.at(gpu).holders;
    return holders.empty() ? nullptr : &holders[0];
  }
  std::vector<std::string> PatchedPods() const {
    std::vector<std::string> out;
    for (const auto& [pod, patch] : api_.patches) out.push_back(pod);
    return out;
  }

  testing::FakeClock clock_;
  std::unique_ptr<nvml::DlNvml> nvml_;
  std::unique_ptr<nvml::NvmlSession> session_;
  nvml::GpuInventory inventory_;
  std::unique_ptr<FakePodResources> pod_resources_;
  std::vector<v1::PodResources> held_;
  std::unique_ptr<PodResourcesClient> client_;
  PodCache pods_;
  FakeApi api_{pods_};
  metrics::Registry registry_;
  UsageCounters counters_;
  std::unique_ptr<UsageMonitor> monitor_;
  std::shared_ptr<const UsageSnapshot> snapshot_;
};

TEST_F(UsageMonitorTest, APodAtThreePercentIsFlaggedIdleWithinOneIntervalAfterTheWindowOneAtSixtyIsNot) {
  AddPod("idle", "u-idle", 0);
  AddPod("busy", "u-busy", 1);
  monitor_->SampleOnce();  // the low period begins now
  const SystemTime start = clock_.WallNow();
  Run(30min - 10s);
  EXPECT_TRUE(api_.patches.empty()) << "flagged before the window was over";
  EXPECT_FALSE(HolderOf(0)->idle);
  Run(10s);
  ASSERT_EQ(PatchedPods(), std::vector<std::string>{"ml/idle"});
  EXPECT_EQ(api_.patches[0].second["metadata"]["annotations"]["phalanx.io/idle-since"], FormatRfc3339(start));
  EXPECT_TRUE(HolderOf(0)->idle);
  EXPECT_EQ(HolderOf(0)->job, "job-idle");
  EXPECT_FALSE(HolderOf(1)->idle);
  // Idle stays idle without writing again.
  Run(5min);
  EXPECT_EQ(api_.patches.size(), 1u);

  std::string text;
  AppendUsageMetrics(text, "node-1", *monitor_->Snapshot());
  EXPECT_NE(text.find("phalanx_gpu_idle{node=\"node-1\",gpu=\"" + Gpu(0) +
                      "\",pod=\"idle\",namespace=\"ml\",container=\"main\",job=\"job-idle\",gang=\"idle-a0\","
                      "tier=\"phalanx-spot\"} 1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("phalanx_gpu_sm_utilisation{node=\"node-1\",gpu=\"" + Gpu(1) + "\",pod=\"busy\""),
            std::string::npos);
  EXPECT_NE(text.find("phalanx_gpu_sm_utilisation_5m{node=\"node-1\",gpu=\"" + Gpu(1) + "\",pod=\"busy\""),
            std::string::npos);
  // The node summary: 5-minute means, rounded.
  auto summaries = monitor_->Summaries();
  EXPECT_EQ(summaries->at(Gpu(0)).sm_util_5m, 3.0);
  EXPECT_EQ(summaries->at(Gpu(1)).sm_util_5m, 60.0);
  EXPECT_EQ(summaries->at(Gpu(1)).memory_used_mib, 30000u);
}

TEST_F(UsageMonitorTest, AttributionFollowsAPodReplacedByANewPodOnTheSameDevice) {
  AddPod("w0", "u-old", 0);
  monitor_->SampleOnce();
  Run(30min);
  ASSERT_EQ(PatchedPods(), std::vector<std::string>{"ml/w0"});
  // The job restarts: the old pod goes, a new one (new UID) gets the same GPU.
  RemovePod("w0");
  AddPod("w0-restarted", "u-new", 0);
  Run(10s);
  const Holder* h = HolderOf(0);
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->name, "w0-restarted");
  EXPECT_EQ(h->uid, "u-new");
  EXPECT_FALSE(h->idle);  // its own window starts now
  std::string text;
  AppendUsageMetrics(text, "node-1", *snapshot_);
  EXPECT_EQ(text.find("pod=\"w0\""), std::string::npos) << "series of the departed pod remain:\n" << text;
  EXPECT_NE(text.find("pod=\"w0-restarted\""), std::string::npos);
  Run(30min);
  EXPECT_EQ(PatchedPods(), (std::vector<std::string>{"ml/w0", "ml/w0-restarted"}));
  // A device nobody holds any more is still measured, with empty pod labels.
  RemovePod("w0-restarted");
  Run(10s);
  EXPECT_EQ(HolderOf(0), nullptr);
  text.clear();
  AppendUsageMetrics(text, "node-1", *snapshot_);
  EXPECT_NE(text.find("phalanx_gpu_sm_utilisation{node=\"node-1\",gpu=\"" + Gpu(0) + "\",pod=\"\""),
            std::string::npos);
  EXPECT_EQ(text.find("phalanx_gpu_idle{"), std::string::npos);
}

TEST_F(UsageMonitorTest, AnIdleAnnotationIsClearedWhenThePodIsBusyAndAdoptedWhenStillIdle) {
  AddPod("was-idle", "u1", 1, "2026-11-01T00:00:00Z");   // GPU 1 runs at 60 % now
  AddPod("still-idle", "u2", 0, "2026-11-01T00:00:00Z");  // GPU 0 at 3 %
  monitor_->SampleOnce();
  ASSERT_EQ(PatchedPods(), std::vector<std::string>{"ml/was-idle"});
  EXPECT_TRUE(api_.patches[0].second["metadata"]["annotations"]["phalanx.io/idle-since"].is_null());
  EXPECT_TRUE(HolderOf(0)->idle);
  EXPECT_EQ(FormatRfc3339(*HolderOf(0)->idle_since), "2026-11-01T00:00:00Z");
  Run(1min);
  EXPECT_EQ(api_.patches.size(), 1u);
}

TEST_F(UsageMonitorTest, AFailedPatchIsRetriedAtTheNextPass) {
  AddPod("idle", "u-idle", 0);
  monitor_->SampleOnce();
  Run(30min - 10s);
  api_.fail_next = true;
  Run(10s);
  EXPECT_TRUE(api_.patches.empty());
  Run(10s);
  ASSERT_EQ(PatchedPods(), std::vector<std::string>{"ml/idle"});
  EXPECT_EQ(counters_.idle_patches->WithLabels({"error"}).value()->Value(), 1);
  EXPECT_EQ(counters_.idle_patches->WithLabels({"ok"}).value()->Value(), 1);
}

// MIG devices: SM utilisation only through GPM (Hopper+). Instances with GPM are judged on their SM
// activity; those of a GPU without GPM are never called idle.
class MigUsageMonitorTest : public UsageMonitorTest {
 protected:
  std::string MachineFile() override {
    std::ifstream in(MachinePath("a100-mig.json"));
    json m = json::parse(in);
    m["gpus"][0]["gpm"] = true;
    m["gpus"][0]["migDevices"][0]["gpmSm"] = 1;
    m["gpus"][0]["migDevices"][1]["gpmSm"] = 50;
    const std::string path = TempDir() + "/mig.json";
    std::ofstream(path) << m.dump();
    return path;
  }
  std::string Mig(int gpu, int i) const { return inventory_.gpus[gpu].mig_devices[i].uuid.str(); }
};

TEST_F(MigUsageMonitorTest, InstancesAreJudgedOnGpmSmActivity) {
  AddPodOn("mig-idle", "u1", Mig(0, 0));
  AddPodOn("mig-busy", "u2", Mig(0, 1));
  AddPodOn("mig-unmeasured", "u3", Mig(1, 0));  // GPU 1 has no GPM
  monitor_->SampleOnce();
  Run(30min + 10s);
  EXPECT_EQ(PatchedPods(), std::vector<std::string>{"ml/mig-idle"});
  auto summaries = monitor_->Summaries();
  EXPECT_EQ(summaries->at(Mig(0, 0)).sm_util_5m, 1.0);
  EXPECT_EQ(summaries->at(Mig(0, 1)).sm_util_5m, 50.0);
  EXPECT_FALSE(summaries->at(Mig(1, 0)).sm_util_5m.has_value());  // memory only
  EXPECT_TRUE(summaries->at(Mig(1, 0)).memory_used_mib.has_value());
}

TEST_F(UsageMonitorTest, WithoutPodResourcesDevicesAreStillSampled) {
  pod_resources_.reset();  // kubelet gone
  monitor_->SampleOnce();
  auto s = monitor_->Snapshot();
  ASSERT_EQ(s->devices.size(), 4u);
  EXPECT_EQ(s->devices[1].sample.sm_util, 60.0);
  EXPECT_TRUE(s->devices[1].holders.empty());
  EXPECT_EQ(monitor_->passes(), 1u);
}

}  // namespace
}  // namespace phalanx::device_plugin
