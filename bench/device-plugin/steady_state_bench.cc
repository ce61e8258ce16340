// Device plugin API cost and admission-path latency with the pod watch (issue 15; results in
// bench/RESULTS.md, "Device plugin: API cost"):
//  - BM_PreferredAllocationFromWatch: GetPreferredAllocation over gRPC to a ResourceServer whose
//    pending pods come from the Publisher's PodCache, fed by a real KubePodWatch against the
//    in-process fake API server (100 pods on the node, the extender's annotated pod among them);
//    per-call wall time p50/p99 and the API requests the plugin made meanwhile (must be 0);
//  - BM_PodListPerCallBefore: the node-scoped pod LIST the plugin used to make on every call and
//    every second (what was removed), same server and pods;
//  - BM_SteadyStateApiCost/N: N simulated nodes (KubePodWatch + Publisher, 1 s interval, each its
//    own client) against the fake API server with pod churn on other nodes; after sync, a 10 s
//    window; counters per node: pod LISTs, pod+node requests, node patches.
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <benchmark/benchmark.h>

#include "core/kube/client.h"
#include "core/kube/config.h"
#include "core/kube/resource.h"
#include "core/log/log.h"
#include "core/log/logger_factory.h"
#include "core/placement/topology_bandwidth.h"
#include "core/topology/reference_machines.h"
#include "device-plugin/plugin/resource_server.h"
#include "device-plugin/publish/kube_pod_watch.h"
#include "device-plugin/publish/pod_cache.h"
#include "device-plugin/publish/publisher.h"
#include "tests/fakes/apiserver/fake_apiserver.h"
#include "tests/fakes/kubelet/device_plugin_client.h"

namespace phalanx::device_plugin {
namespace {

using namespace std::chrono_literals;
using fakes::apiserver::FakeApiServer;
using nlohmann::json;

constexpr const char* kAgent = "phalanx-device-plugin";

json Pod(const std::string& name, const std::string& node, const std::string& devices = "") {
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", name}, {"namespace", "ml"}}},
              {"spec",
               {{"nodeName", node},
                {"containers", json::array({{{"name", "main"},
                                             {"image", "trainer"},
                                             {"resources", {{"limits", {{"nvidia.com/gpu", "1"}}}}}}})}}},
              {"status", {{"phase", "Running"}}}};
  if (!devices.empty()) {
    pod["metadata"]["annotations"] = {{"phalanx.io/devices", devices}};
    pod["status"]["phase"] = "Pending";
  }
  return pod;
}

// `qps` 5: the plugin's own client limits (kube_node_api.cc); 0: none (to time the server alone).
std::unique_ptr<kube::KubeClient> Client(const FakeApiServer& api, double qps = 5) {
  kube::KubeConfig config;
  config.server = api.url();
  config.token = "fake-token";
  kube::ClientOptions o;
  o.user_agent = kAgent;
  o.qps = qps;
  o.burst = 10;
  return kube::KubeClient::Create(config, o).value();
}

class NullNodeApi final : public NodeApi {
 public:
  explicit NullNodeApi(kube::KubeClient& client) : client_(client) {}
  Status PatchNode(const std::string& node, const json& patch) override {
    auto r = client_.Patch(kube::resources::kNodes, "", node, kube::PatchType::kMerge, patch);
    return r.ok() ? OkStatus() : r.status();
  }
  Status PatchPod(const std::string& ns, const std::string& name, const json& patch) override {
    auto r = client_.Patch(kube::resources::kPods, ns, name, kube::PatchType::kMerge, patch);
    return r.ok() ? OkStatus() : r.status();
  }

 private:
  kube::KubeClient& client_;
};

std::unique_ptr<FakeApiServer> StartApi() {
  auto api = FakeApiServer::Start({.io_threads = 2}).value();
  (void)api->Create("namespaces", json{{"metadata", {{"name", "ml"}}}});
  return api;
}

void BM_PreferredAllocationFromWatch(benchmark::State& state) {
  auto api = StartApi();
  (void)api->Create("nodes", json{{"metadata", {{"name", "node-1"}}}});
  const topology::NodeTopology node = topology::MakeDgxH100Node();
  ResourceSpec spec{.name = "nvidia.com/gpu"};
  for (size_t i = 0; i < node.gpus.size(); ++i) {
    AdvertisedDevice d;
    d.id = node.gpus[i].uuid.str();
    d.physical = node.gpus[i].uuid;
    d.parent_gpu = d.physical;
    d.gpu_position = static_cast<int>(i);
    spec.devices.push_back(d);
  }
  for (int i = 0; i < 99; ++i) (void)api->Create("pods", Pod("run-" + std::to_string(i), "node-1"));
  const std::string want = spec.devices[5].id;
  (void)api->Create("pods", Pod("gang-0", "node-1", json{{"main", {want}}}.dump()));

  auto client = Client(*api);
  PodCache cache;
  KubePodWatch watch(*client, "node-1", cache);
  watch.Start();
  while (!cache.Synced()) std::this_thread::sleep_for(1ms);
  NullNodeApi node_api(*client);
  HealthTable health;
  Publisher publisher(PublisherOptions{.node_name = "node-1"}, node_api, cache, nullptr, node, false, {spec}, health,
                      nullptr, log::MakeLogger("bench"));
  Config config;
  auto bandwidth = std::make_shared<placement::BandwidthMatrix>(placement::BandwidthFromTopology(node));
  char pattern[] = "/tmp/phx-dp-ss-XXXXXX";
  const std::string dir = mkdtemp(pattern);
  ServerDeps deps{.config = &config, .health = &health, .bandwidth = bandwidth, .pods = &publisher,
                  .logger = log::MakeLogger("bench")};
  auto server = ResourceServer::Start(spec, dir + "/gpu.sock", deps).value();
  auto kubelet = fake_kubelet::DevicePluginClient::Connect(dir + "/gpu.sock", /*follow=*/false, 10s).value();

  v1beta1::PreferredAllocationRequest req;
  auto* c = req.add_container_requests();
  for (const auto& d : spec.devices) c->add_available_deviceids(d.id);
  c->set_allocation_size(1);
  api->ClearRequestCounts();
  std::vector<double> us;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = kubelet->GetPreferredAllocation(req, 10s);
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    if (!r.ok() || r->container_responses(0).deviceids(0) != want) state.SkipWithError("not the annotated device");
  }
  std::sort(us.begin(), us.end());
  state.counters["p50_us"] = us[us.size() / 2];
  state.counters["p99_us"] = us[std::min(us.size() - 1, us.size() * 99 / 100)];
  state.counters["api_requests"] = static_cast<double>(api->RequestCount(kAgent, "", ""));
  kubelet.reset();
  server.reset();
  watch.Stop();
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_PreferredAllocationFromWatch)->Iterations(5000)->Unit(benchmark::kMicrosecond);

void BM_PodListPerCallBefore(benchmark::State& state) {
  auto api = StartApi();
  for (int i = 0; i < 100; ++i) (void)api->Create("pods", Pod("run-" + std::to_string(i), "node-1"));
  for (int i = 0; i < 1000; ++i) (void)api->Create("pods", Pod("else-" + std::to_string(i), "node-2"));
  // Unlimited: the request itself; the plugin's 5 QPS limiter made back-to-back calls wait ~200 ms.
  auto client = Client(*api, 0);
  for (auto _ : state) {
    auto r = client->ListAll(kube::resources::kPods, "", {.field_selector = "spec.nodeName=node-1"});
    if (!r.ok()) state.SkipWithError(r.status().ToString().c_str());
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_PodListPerCallBefore)->Iterations(500)->Unit(benchmark::kMicrosecond);

void BM_SteadyStateApiCost(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  auto api = StartApi();
  const topology::NodeTopology topo = topology::MakePcie4GpuNode();
  struct SimNode {
    std::unique_ptr<kube::KubeClient> client;
    PodCache cache;
    std::unique_ptr<KubePodWatch> watch;
    std::unique_ptr<NullNodeApi> node_api;
    HealthTable health;
    std::unique_ptr<Publisher> publisher;
  };
  std::vector<std::unique_ptr<SimNode>> sims;
  for (int i = 0; i < nodes; ++i) {
    const std::string name = "node-" + std::to_string(i);
    (void)api->Create("nodes", json{{"metadata", {{"name", name}}}});
    for (int p = 0; p < 4; ++p) (void)api->Create("pods", Pod(name + "-run-" + std::to_string(p), name));
    auto s = std::make_unique<SimNode>();
    s->client = Client(*api);
    s->watch = std::make_unique<KubePodWatch>(*s->client, name, s->cache);
    s->node_api = std::make_unique<NullNodeApi>(*s->client);
    s->publisher = std::make_unique<Publisher>(PublisherOptions{.node_name = name}, *s->node_api, s->cache, nullptr,
                                               topo, false, std::vector<ResourceSpec>{}, s->health, nullptr,
                                               log::MakeLogger("bench"));
    s->watch->Start();
    s->publisher->Start();
    sims.push_back(std::move(s));
  }
  for (auto& s : sims) {
    while (!s->publisher->DegradedReason().empty()) std::this_thread::sleep_for(10ms);  // fully published
  }
  for (auto _ : state) {
    api->ClearRequestCounts();
    const auto end = std::chrono::steady_clock::now() + 10s;
    for (int i = 0; std::chrono::steady_clock::now() < end; ++i) {
      // Churn elsewhere: pods come and go on a node none of these plugins run on.
      const std::string name = "churn-" + std::to_string(i);
      (void)api->Create("pods", Pod(name, "node-elsewhere"));
      (void)api->Delete("pods", "ml", name);
      std::this_thread::sleep_for(20ms);
    }
  }
  const double n = nodes;
  state.counters["pod_lists_per_node_10s"] = static_cast<double>(api->RequestCount(kAgent, "list", "pods")) / n;
  state.counters["pod_node_requests_per_node_10s"] =
      static_cast<double>(api->RequestCount(kAgent, "", "pods") + api->RequestCount(kAgent, "", "nodes")) / n;
  state.counters["node_patches_per_node_10s"] = static_cast<double>(api->RequestCount(kAgent, "patch", "nodes")) / n;
  state.counters["all_requests"] = static_cast<double>(api->RequestCount(kAgent, "", ""));
  for (auto& s : sims) {
    s->publisher->Stop();
    s->watch->Stop();
  }
}
BENCHMARK(BM_SteadyStateApiCost)->Arg(20)->Arg(100)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace phalanx::device_plugin
BENCHMARK_MAIN();
