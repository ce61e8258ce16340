// Device plugin benchmarks (issue 4 "Bench"; results in bench/RESULTS.md, "Device plugin"):
//  - GetPreferredAllocation / Allocate as kubelet calls them: gRPC over the unix socket to
//    a ResourceServer built from the fake NVML dgx-h100 machine (8 H100, NVSwitch);
//  - the pure choice (ChoosePreferred) for k of 16 GPUs (two 8-GPU NVLink islands) and
//    k of 8;
//  - health change -> ListAndWatch: HealthTable::SetUnhealthy on one thread until the
//    client (kubelet's side) has read the list with that GPU Unhealthy.
#include <stdlib.h>
#include <sys/resource.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "core/log/log.h"
#include "core/log/logger_factory.h"
#include "core/placement/topology_bandwidth.h"
#include "device-plugin/nvml/dl_nvml.h"
#include "device-plugin/nvml/gpu_discovery.h"
#include "device-plugin/nvml/nvml_session.h"
#include "device-plugin/plugin/allocation.h"
#include "device-plugin/plugin/device_model.h"
#include "device-plugin/plugin/node_topology_reader.h"
#include "device-plugin/plugin/resource_server.h"
#include "tests/fakes/kubelet/device_plugin_client.h"

namespace phalanx::device_plugin {
namespace {

using namespace std::chrono_literals;

// One ResourceServer for nvidia.com/gpu on dgx-h100 and kubelet's client to it.
struct Dgx {
  Config config;
  HealthTable health;
  std::vector<ResourceSpec> resources;
  std::shared_ptr<placement::BandwidthMatrix> bandwidth;
  std::unique_ptr<ResourceServer> server;
  std::unique_ptr<fake_kubelet::DevicePluginClient> client;
  std::string dir;

  Dgx() {
    setenv("FAKE_NVML_MACHINE", FAKE_NVML_MACHINES "/dgx-h100.json", 1);
    auto nvml = nvml::DlNvml::Load(FAKE_NVML_LIBRARY).value();
    auto session = nvml::NvmlSession::Open(*nvml).value();
    auto inventory = nvml::DiscoverGpus(*nvml).value();
    resources = BuildResources(inventory, config).value();
    bandwidth = std::make_shared<placement::BandwidthMatrix>(
        placement::BandwidthFromTopology(TopologyFromInventory(inventory).value()));
    char pattern[] = "/tmp/phx-dp-bench-XXXXXX";
    dir = mkdtemp(pattern);
    ServerDeps deps{.config = &config, .health = &health, .bandwidth = bandwidth,
                    .logger = log::MakeLogger("bench")};
    server = ResourceServer::Start(resources[0], dir + "/gpu.sock", deps).value();
    client = fake_kubelet::DevicePluginClient::Connect(dir + "/gpu.sock", /*follow=*/true, 10s).value();
    if (!client->WaitForDevices([](const auto& ds) { return ds.size() == 8; }, 10s)) std::abort();
  }
  ~Dgx() {
    client.reset();
    server.reset();
    std::filesystem::remove_all(dir);
  }
  std::vector<std::string> Ids() const {
    std::vector<std::string> out;
    for (const auto& d : resources[0].devices) out.push_back(d.id);
    return out;
  }
};

Dgx& Machine() {
  static Dgx* dgx = new Dgx();  // leaked: gRPC shutdown order at exit is not worth the risk
  return *dgx;
}

void BM_GrpcGetPreferredAllocation_Dgx8(benchmark::State& state) {
  Dgx& m = Machine();
  v1beta1::PreferredAllocationRequest req;
  auto* c = req.add_container_requests();
  for (const auto& id : m.Ids()) c->add_available_deviceids(id);
  c->set_allocation_size(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    auto r = m.client->GetPreferredAllocation(req, 10s);
    if (!r.ok()) state.SkipWithError(r.status().ToString().c_str());
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_GrpcGetPreferredAllocation_Dgx8)->DenseRange(1, 8)->Unit(benchmark::kMicrosecond);

void BM_GrpcAllocate_Dgx(benchmark::State& state) {
  Dgx& m = Machine();
  v1beta1::AllocateRequest req;
  auto ids = m.Ids();
  auto* c = req.add_container_requests();
  for (int i = 0; i < state.range(0); ++i) c->add_devices_ids(ids[static_cast<size_t>(i)]);
  for (auto _ : state) {
    auto r = m.client->Allocate(req, 10s);
    if (!r.ok()) state.SkipWithError(r.status().ToString().c_str());
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_GrpcAllocate_Dgx)->Arg(1)->Arg(8)->Unit(benchmark::kMicrosecond);

// k of N GPUs: N = 8 (one NVSwitch island) or 16 (two islands of 8, PCIe between them),
// every GPU available.
void BM_ChoosePreferred(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const int k = static_cast<int>(state.range(1));
  ResourceSpec spec{.name = "nvidia.com/gpu"};
  placement::BandwidthMatrix bw(n);
  PreferredRequest req{.size = k};
  for (int i = 0; i < n; ++i) {
    AdvertisedDevice d;
    d.id = "GPU-" + std::to_string(1000 + i);
    d.physical = GpuUuid(d.id);
    d.parent_gpu = d.physical;
    d.gpu_position = i;
    spec.devices.push_back(d);
    req.available.push_back(d.id);
    for (int j = 0; j < i; ++j) bw.Set(i, j, (i / 8 == j / 8) ? 450.0 : 32.0);
  }
  for (auto _ : state) {
    auto r = ChoosePreferred(spec, bw, req, {});
    if (!r.ok()) state.SkipWithError(r.status().ToString().c_str());
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_ChoosePreferred)->Args({8, 4})->Args({8, 8})->Args({16, 2})->Args({16, 4})->Args({16, 8})
    ->Args({16, 12})->Args({16, 15})->Args({16, 16})
    ->Unit(benchmark::kMicrosecond);

// A GPU turns Unhealthy -> kubelet's ListAndWatch client has the list saying so; then back.
void BM_HealthChangeToListAndWatch(benchmark::State& state) {
  Dgx& m = Machine();
  const std::string gpu = m.Ids()[3];
  for (auto _ : state) {
    m.health.SetUnhealthy(gpu, "XID 79", 79, MonotonicTime{});
    if (!m.client->WaitForDevices([&](const auto& ds) {
          for (const auto& d : ds) if (d.id() == gpu) return d.health() == "Unhealthy";
          return false;
        }, 10s)) state.SkipWithError("no Unhealthy update");
    m.health.SetHealthy(gpu);
    if (!m.client->WaitForDevices([&](const auto& ds) {
          for (const auto& d : ds) if (d.id() == gpu) return d.health() == "Healthy";
          return false;
        }, 10s)) state.SkipWithError("no Healthy update");
  }
  state.SetLabel("2 updates per iteration (Unhealthy, then Healthy)");
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  state.counters["max_rss_mib"] = static_cast<double>(ru.ru_maxrss) / 1024.0;
}
BENCHMARK(BM_HealthChangeToListAndWatch)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace phalanx::device_plugin
BENCHMARK_MAIN();
