// Utilisation sampling benchmarks (issue 18 "Targets"; results in bench/RESULTS.md,
// "Utilisation sampling"):
//  - BM_SamplingPass: one full UsageMonitor pass as the daemon runs it — NVML reads of every
//    device through the dlopen'ed fake driver, pod-resources List over gRPC (one pod per device),
//    PodCache join, 5-minute mean, idle tracker — on dgx-h100 (8 GPUs) and on 8 A100s in MIG mode
//    with 7x 1g.10gb each (56 MIG devices). Counter core_pct_at_10s = CPU per pass / 10 s.
//  - BM_AllocateWhileSampling / BM_ListAndWatchWhileSampling: kubelet's Allocate over gRPC, and
//    health change -> ListAndWatch update, with sampling off (0), at the default 10 s (1) and at
//    10 ms (2, a 1000x stress); counters p50_us/p99_us from per-call latencies.
// The fake driver answers in microseconds; a real driver's ioctls cost more (see RESULTS.md).
#include <stdlib.h>
#include <time.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>

#include "core/log/log.h"
#include "core/log/logger_factory.h"
#include "core/placement/topology_bandwidth.h"
#include "device-plugin/nvml/dl_nvml.h"
#include "device-plugin/nvml/gpu_discovery.h"
#include "device-plugin/nvml/nvml_session.h"
#include "device-plugin/plugin/device_model.h"
#include "device-plugin/plugin/node_topology_reader.h"
#include "device-plugin/plugin/resource_server.h"
#include "device-plugin/usage/usage_monitor.h"
#include "tests/fakes/kubelet/device_plugin_client.h"
#include "tests/fakes/kubelet/fake_pod_resources.h"

namespace phalanx::device_plugin {
namespace {

using namespace std::chrono_literals;

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

std::string TempDir() {
  char pattern[] = "/tmp/phx-util-bench-XXXXXX";
  return mkdtemp(pattern);
}

// dgx-h100 with every GPU busy, or a100-mig with all 8 GPUs as 7x 1g.10gb.
std::string MachineFile(const std::string& dir, bool mig56) {
  std::ifstream in(std::string(FAKE_NVML_MACHINES) + (mig56 ? "/a100-mig.json" : "/dgx-h100.json"));
  nlohmann::json m = nlohmann::json::parse(in);
  for (size_t g = 0; g < m["gpus"].size(); ++g) {
    auto& gpu = m["gpus"][g];
    gpu["utilisation"] = {{"curve", "sawtooth"}, {"periodSeconds", 7}, {"memoryUsedMiB", 1000}};
    gpu["gpm"] = true;  // every query the sampler can make, GPM included
    if (!mig56) continue;
    gpu["migEnabled"] = true;
    gpu["migDevices"] = nlohmann::json::array();
    for (int i = 0; i < 7; ++i) {
      char uuid[64];
      std::snprintf(uuid, sizeof(uuid), "MIG-bench%02zu-%02d-0000-0000-000000000000", g, i);
      gpu["migDevices"].push_back({{"uuid", uuid}, {"profileId", 19}, {"gpuInstanceId", 7 + i},
                                   {"computeInstanceId", 0}, {"placementStart", i}, {"memoryUsedMiB", 100},
                                   {"gpmSm", 10 * i}});
    }
  }
  const std::string path = dir + (mig56 ? "/mig56.json" : "/dgx8.json");
  std::ofstream(path) << m.dump();
  return path;
}

// One NVML session per machine shape for the whole run (the fake reloads its machine only when
// its init count drops to 0, which these leaked sessions prevent: so one shape per process).
struct Node {
  std::string dir;
  std::unique_ptr<nvml::DlNvml> nvml;
  std::unique_ptr<nvml::NvmlSession> session;
  nvml::GpuInventory inventory;
  std::unique_ptr<fake_kubelet::FakePodResources> pod_resources;
  std::unique_ptr<PodResourcesClient> client;
  PodCache pods;
  // Kubelet's side of nvidia.com/gpu.
  Config config;
  HealthTable health;
  std::vector<ResourceSpec> resources;
  std::shared_ptr<placement::BandwidthMatrix> bandwidth;
  std::unique_ptr<ResourceServer> server;
  std::unique_ptr<fake_kubelet::DevicePluginClient> kubelet;

  explicit Node(bool mig56) : dir(TempDir()) {
    setenv("FAKE_NVML_MACHINE", MachineFile(dir, mig56).c_str(), 1);
    nvml = nvml::DlNvml::Load(FAKE_NVML_LIBRARY).value();
    session = nvml::NvmlSession::Open(*nvml).value();
    inventory = nvml::DiscoverGpus(*nvml).value();
    pod_resources = fake_kubelet::FakePodResources::Start(dir + "/kubelet.sock").value();
    client = std::make_unique<PodResourcesClient>(dir + "/kubelet.sock");
    std::vector<v1::PodResources> held;
    int n = 0;
    for (const auto& g : inventory.gpus) {
      std::vector<std::string> ids;
      if (g.mig_devices.empty()) ids.push_back(g.uuid.str());
      for (const auto& m : g.mig_devices) ids.push_back(m.uuid.str());
      for (const auto& id : ids) {
        const std::string name = "w" + std::to_string(n++);
        held.push_back(fake_kubelet::FakePodResources::MakePod("ml", name, "main", "nvidia.com/gpu", {id}));
        pods.Put(PodOnNode{.uid = "uid-" + name, .ns = "ml", .name = name, .phase = "Running", .job = "llm"});
      }
    }
    pod_resources->SetPods(held);
    pods.SetSynced();
    if (mig56) return;
    resources = BuildResources(inventory, config).value();
    bandwidth = std::make_shared<placement::BandwidthMatrix>(
        placement::BandwidthFromTopology(TopologyFromInventory(inventory).value()));
    ServerDeps deps{.config = &config, .health = &health, .bandwidth = bandwidth, .logger = log::MakeLogger("bench")};
    server = ResourceServer::Start(resources[0], dir + "/gpu.sock", deps).value();
    kubelet = fake_kubelet::DevicePluginClient::Connect(dir + "/gpu.sock", /*follow=*/true, 10s).value();
    if (!kubelet->WaitForDevices([](const auto& ds) { return ds.size() == 8; }, 10s)) std::abort();
  }

  std::unique_ptr<UsageMonitor> Monitor(std::chrono::milliseconds interval) {
    return std::make_unique<UsageMonitor>(
        UsageMonitorOptions{.node_name = "node-1", .interval = interval}, *nvml, inventory,
        UsageMonitorDeps{.pod_resources = client.get(), .pods = &pods}, log::MakeLogger("bench"));
  }
};

Node& Shape(bool mig56) {
  static Node* node = new Node(mig56);  // leaked, like device_plugin_bench (gRPC at exit)
  return *node;
}

bool Mig56() {
  const char* v = std::getenv("PHALANX_BENCH_MIG56");
  return v != nullptr && std::string(v) == "1";
}

void BM_SamplingPass(benchmark::State& state) {
  Node& node = Shape(Mig56());
  auto monitor = node.Monitor(10s);
  monitor->SampleOnce();  // handles resolved, unsupported queries found
  double cpu = 0;
  for (auto _ : state) {
    const double before = ThreadCpuSeconds();
    monitor->SampleOnce();
    cpu += ThreadCpuSeconds() - before;
  }
  const double per_pass = cpu / static_cast<double>(state.iterations());
  state.counters["devices"] = static_cast<double>(monitor->Snapshot()->devices.size());
  state.counters["cpu_us_per_pass"] = per_pass * 1e6;
  state.counters["core_pct_at_10s"] = per_pass / 10.0 * 100.0;
  state.SetLabel(Mig56() ? "8 A100 in MIG mode, 56x 1g.10gb" : "dgx-h100, 8 GPUs");
}
BENCHMARK(BM_SamplingPass)->Unit(benchmark::kMicrosecond);

std::unique_ptr<UsageMonitor> Sampling(Node& node, int64_t mode) {
  if (mode == 0) return nullptr;
  auto m = node.Monitor(mode == 1 ? std::chrono::milliseconds(10s) : std::chrono::milliseconds(10ms));
  m->Start();
  return m;
}

void Percentiles(benchmark::State& state, std::vector<double>& us, int64_t mode) {
  std::sort(us.begin(), us.end());
  if (us.empty()) return;
  state.counters["p50_us"] = us[us.size() / 2];
  state.counters["p99_us"] = us[std::min(us.size() - 1, us.size() * 99 / 100)];
  state.SetLabel(mode == 0 ? "sampling off" : mode == 1 ? "sampling every 10 s" : "sampling every 10 ms");
}

void BM_AllocateWhileSampling(benchmark::State& state) {
  if (Mig56()) return state.SkipWithError("whole GPUs only");
  Node& node = Shape(false);
  auto sampling = Sampling(node, state.range(0));
  v1beta1::AllocateRequest req;
  auto* c = req.add_container_requests();
  for (int i = 0; i < 8; ++i) c->add_devices_ids(node.resources[0].devices[static_cast<size_t>(i)].id);
  std::vector<double> us;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = node.kubelet->Allocate(req, 10s);
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    if (!r.ok()) state.SkipWithError(r.status().ToString().c_str());
  }
  Percentiles(state, us, state.range(0));
}
BENCHMARK(BM_AllocateWhileSampling)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->Iterations(20000);

void BM_ListAndWatchWhileSampling(benchmark::State& state) {
  if (Mig56()) return state.SkipWithError("whole GPUs only");
  Node& node = Shape(false);
  auto sampling = Sampling(node, state.range(0));
  const std::string gpu = node.resources[0].devices[3].id;
  std::vector<double> us;
  auto wait_for = [&](const char* health) {
    return node.kubelet->WaitForDevices([&](const auto& ds) {
      for (const auto& d : ds) if (d.id() == gpu) return d.health() == health;
      return false;
    }, 10s);
  };
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    node.health.SetUnhealthy(gpu, "XID 79", 79, MonotonicTime{});
    if (!wait_for("Unhealthy")) state.SkipWithError("no Unhealthy update");
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    node.health.SetHealthy(gpu);
    if (!wait_for("Healthy")) state.SkipWithError("no Healthy update");
  }
  Percentiles(state, us, state.range(0));
}
BENCHMARK(BM_ListAndWatchWhileSampling)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->Iterations(3000);

}  // namespace
}  // namespace phalanx::device_plugin
BENCHMARK_MAIN();
