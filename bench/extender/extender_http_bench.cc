// The extender's verbs over loopback HTTP in one process, against a trivial request on the
// same server, so that one run gives ratios a noisy shared machine cannot skew much (the gate's
// in-process measurement; the daemon's is extender_load --json):
//   BM_HttpEcho                 GET /healthz: the HTTP round trip alone (Beast server, 2 io
//                               threads, one keep-alive connection, TCP_NODELAY)
//   BM_HttpFilter/N             POST /v1/filter, a 4-GPU pod, N names: fits on every node
//   BM_HttpFilterNoFit/N        POST /v1/filter, an 8-GPU pod: fits nowhere, every name in
//                               the reply with its reason
//   BM_HttpPrioritize/N         POST /v1/prioritize, the 4-GPU pod
//   BM_HttpBind                 POST /v1/bind of a new pending 1-GPU pod per iteration (devices
//                               chosen, ledger charged, the recorded Binding written, answered)
// The cluster: 5,000 DGX H100 nodes with 4 of 8 GPUs held by priority-0 pods. Client-side wall
// time per request; p50/p99 as counters. Compare each verb's time with BM_HttpEcho's.
// Command: build/bench/extender/extender_http_bench (bench/RESULTS.md, Extender).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "bench/extender/bench_cluster.h"
#include "bench/extender/bench_http.h"
#include "core/base/clock.h"
#include "core/metrics/registry.h"
#include "extender/extender.h"
#include "extender/server/server.h"

namespace phalanx::extender::bench {
namespace {

constexpr int kNodes = 5000;
constexpr int kBusyPerNode = 4;
constexpr int kPendingPods = kNodes * (8 - kBusyPerNode);  // bind: each pod once, every GPU once

struct Served {
  Served() : ext(DefaultConfig(), RealClock::Instance(), writer, leadership) {
    for (int i = 0; i < kNodes; ++i) (void)ext.OnNode(BenchNode(i));
    for (int i = 0; i < kNodes; ++i) {
      for (int b = 0; b < kBusyPerNode; ++b) ext.OnPod(BenchPod(fmt::format("busy-{}-{}", i, b), 1, NodeName(i)));
    }
    for (int i = 0; i < kPendingPods; ++i) ext.OnPod(BenchPod(PendingPodName(i), 1));
    ServerAddresses addresses;
    addresses.listen_port = 0;
    addresses.serve_metrics = false;
    server = std::make_unique<ExtenderServer>(ext, registry, addresses);
    started = server->Start();
    server->SetReady(true);
  }
  RecordingWriter writer;
  StaticLeadership leadership{true};
  Extender ext;
  metrics::Registry registry;
  std::unique_ptr<ExtenderServer> server;
  Status started = OkStatus();
  int next_pending = 0;
};

Served& Server() {
  static Served* s = new Served();
  return *s;
}

// Sends `next()` and reads the reply per iteration; wall-clock p50/p99 as counters.
template <class Next>
void RoundTrips(benchmark::State& state, Next next) {
  Served& s = Server();
  if (!s.started.ok()) {
    state.SkipWithError(std::string(s.started.message()).c_str());
    return;
  }
  Conn conn(s.server->port());
  std::string request, body;
  std::vector<double> us;
  size_t reply_bytes = 0;
  for (auto _ : state) {
    if (!next(&request)) {
      state.SkipWithError("no pending pod left to bind");
      return;
    }
    const auto t0 = std::chrono::steady_clock::now();
    const int status = conn.Call(request, &body);
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    if (status != 200) {
      state.SkipWithError(("HTTP " + std::to_string(status) + ": " + body.substr(0, 200)).c_str());
      return;
    }
    reply_bytes = body.size();
  }
  std::sort(us.begin(), us.end());
  if (!us.empty()) {
    state.counters["p50_us"] = us[us.size() / 2];
    state.counters["p99_us"] = us[std::min(us.size() - 1, us.size() * 99 / 100)];
  }
  state.counters["request_bytes"] = static_cast<double>(request.size());
  state.counters["reply_bytes"] = static_cast<double>(reply_bytes);
}

void Fixed(benchmark::State& state, const std::string& request) {
  RoundTrips(state, [&](std::string* out) {
    *out = request;
    return true;
  });
}

std::string VerbRequest(const std::string& verb, int gpus, int names) {
  return Conn::Format("POST", verb, FilterBody(WorkerPodJson("worker-0", gpus), names));
}

void BM_HttpEcho(benchmark::State& state) { Fixed(state, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); }
BENCHMARK(BM_HttpEcho)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_HttpFilter(benchmark::State& state) {
  Fixed(state, VerbRequest("/v1/filter", 4, static_cast<int>(state.range(0))));
}
BENCHMARK(BM_HttpFilter)->Arg(5000)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_HttpFilterNoFit(benchmark::State& state) {
  Fixed(state, VerbRequest("/v1/filter", 8, static_cast<int>(state.range(0))));
}
BENCHMARK(BM_HttpFilterNoFit)->Arg(5000)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_HttpPrioritize(benchmark::State& state) {
  Fixed(state, VerbRequest("/v1/prioritize", 4, static_cast<int>(state.range(0))));
}
BENCHMARK(BM_HttpPrioritize)->Arg(5000)->Unit(benchmark::kMicrosecond)->UseRealTime();

// Last: each bind takes a GPU, so the verbs above see the cluster as described.
void BM_HttpBind(benchmark::State& state) {
  Served& s = Server();
  RoundTrips(state, [&](std::string* out) {
    if (s.next_pending >= kPendingPods) return false;
    const int i = s.next_pending++;
    *out = Conn::Format("POST", "/v1/bind",
                        fmt::format(R"({{"PodName":"{0}","PodNamespace":"bench","PodUID":"uid-{0}","Node":"{1}"}})",
                                    PendingPodName(i), NodeName(i % kNodes)));
    return true;
  });
}
BENCHMARK(BM_HttpBind)->Unit(benchmark::kMicrosecond)->UseRealTime()->Iterations(5000);

}  // namespace
}  // namespace phalanx::extender::bench

BENCHMARK_MAIN();
