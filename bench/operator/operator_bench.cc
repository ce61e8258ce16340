// BM_CreateGangs/<jobs>/<replicas>: TrainingJobs already stored in the fake API server; the
// operator starts, lists them and creates every Service and pod. Wall time from controller
// start until the fake holds jobs*replicas pods (docs/architecture.md §6 target: 1,000 x 8 in <= 30 s).
// BM_RestartGang/<replicas>: a running gang is disrupted; time from the last old pod gone to
// the whole new gang created (issue 6's time-to-restart).
#include <benchmark/benchmark.h>
#include <spdlog/sinks/null_sink.h>

#include <chrono>
#include <thread>

#include "core/kube/client.h"
#include "core/kube/config.h"
#include "core/metrics/registry.h"
#include "operator/controller/controller.h"
#include "tests/fakes/apiserver/fake_apiserver.h"

namespace phalanx::op {
namespace {

namespace fa = fakes::apiserver;
using json::Json;

Json JobJson(int i, int replicas) {
  return Json{{"apiVersion", "phalanx.io/v1alpha1"},
              {"kind", "TrainingJob"},
              {"metadata", {{"name", "job-" + std::to_string(i)}, {"namespace", "bench"}}},
              {"spec",
               {{"replicas", replicas},
                {"gpusPerReplica", 8},
                {"template", {{"spec", {{"containers", Json::array({Json{{"name", "t"}, {"image", "t:1"}}})}}}}}}}};
}

struct Harness {
  std::unique_ptr<fa::FakeApiServer> server;
  std::unique_ptr<kube::KubeClient> client;
  metrics::Registry registry;
  std::unique_ptr<OperatorMetrics> metrics;
  std::unique_ptr<Controller> controller;
  std::thread worker;

  bool Init(int workers) {
    fa::FakeApiServerOptions so;
    so.logger = std::make_shared<spdlog::logger>("fake", std::make_shared<spdlog::sinks::null_sink_mt>());
    auto s = fa::FakeApiServer::Start(so);
    if (!s.ok()) return false;
    server = std::move(*s);
    auto cfg = kube::ParseKubeconfig(server->Kubeconfig(), "bench", "/tmp", "");
    kube::ClientOptions co;
    co.qps = 0;  // measure the operator, not a rate limit
    auto c = kube::KubeClient::Create(*cfg, co);
    if (!c.ok()) return false;
    client = std::move(*c);
    metrics = std::move(*OperatorMetrics::Create(registry));
    ControllerOptions opts;
    opts.workers = workers;
    controller = std::make_unique<Controller>(*client, opts, *metrics,
                                              std::make_shared<spdlog::logger>("op", std::make_shared<spdlog::sinks::null_sink_mt>()),
                                              RealClock::Instance());
    return true;
  }
  void Start() {
    (void)controller->StartInformers(std::chrono::seconds(60));
    worker = std::thread([this] { controller->Run(); });
  }
  ~Harness() {
    if (controller) controller->Stop();
    if (worker.joinable()) worker.join();
  }
};

void BM_CreateGangs(benchmark::State& state) {
  const int jobs = static_cast<int>(state.range(0));
  const int replicas = static_cast<int>(state.range(1));
  for (auto _ : state) {
    Harness h;
    if (!h.Init(8)) {
      state.SkipWithError("fake API server did not start");
      return;
    }
    for (int i = 0; i < jobs; ++i) (void)h.server->Create("trainingjobs.phalanx.io", JobJson(i, replicas));
    const auto start = std::chrono::steady_clock::now();
    h.Start();
    auto pods = h.server->WaitForCount("pods", "bench", "phalanx.io/job-name", static_cast<size_t>(jobs) * replicas,
                                       std::chrono::minutes(5));
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!pods.ok()) state.SkipWithError("not every pod was created");
    state.SetIterationTime(secs);
    state.counters["pods_per_s"] = static_cast<double>(jobs) * replicas / secs;
  }
}
BENCHMARK(BM_CreateGangs)->Args({100, 8})->Args({1000, 8})->Iterations(1)->UseManualTime()->Unit(benchmark::kSecond);

void BM_RestartGang(benchmark::State& state) {
  const int replicas = static_cast<int>(state.range(0));
  for (auto _ : state) {
    Harness h;
    if (!h.Init(4)) {
      state.SkipWithError("fake API server did not start");
      return;
    }
    (void)h.server->Create("trainingjobs.phalanx.io", JobJson(0, replicas));
    h.Start();
    (void)h.server->WaitForCount("pods", "bench", "phalanx.io/attempt=1", replicas, std::chrono::seconds(60));
    Json cond = {{"status", {{"conditions", Json::array({Json{{"type", "DisruptionTarget"}, {"status", "True"},
                                                              {"reason", "PreemptionByScheduler"}}})}}}};
    (void)h.server->Patch("pods", "bench", "job-0-a1-0", fa::PatchType::kStrategic, cond.dump(), true);
    // Unbound pods: the operator deletes them and releases the finalizers itself.
    for (int i = 0; i < replicas; ++i) {
      (void)h.server->WaitForGone("pods", "bench", "job-0-a1-" + std::to_string(i), std::chrono::seconds(60));
    }
    const auto gone = std::chrono::steady_clock::now();
    auto pods = h.server->WaitForCount("pods", "bench", "phalanx.io/attempt=2", replicas, std::chrono::seconds(60));
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - gone).count();
    if (!pods.ok()) state.SkipWithError("new gang not created");
    state.SetIterationTime(secs);
  }
}
BENCHMARK(BM_RestartGang)->Arg(8)->Iterations(5)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace phalanx::op

BENCHMARK_MAIN();
