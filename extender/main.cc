// phalanx-extender: the scheduler extender beside kube-scheduler (DESIGN §1, §2.5, §3).
// Flags are validated before anything starts; see docs/extender.md.
#include <malloc.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include <CLI/CLI.hpp>

#include "core/base/clock.h"
#include "core/base/version.h"
#include "core/base/shutdown_signal.h"
#include "core/log/log.h"
#include "core/log/log_options.h"
#include "core/log/logger_factory.h"
#include "core/metrics/build_info.h"
#include "core/metrics/registry.h"
#include "extender/config.h"
#include "extender/extender.h"
#include "extender/server.h"
#include "extender/snapshot.h"

namespace {

int Fail(const std::string& message) {
  std::fprintf(stderr, "phalanx-extender: %s\n", message.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace phalanx;
  ShutdownSignal shutdown;  // first: before any thread exists

  CLI::App app{"phalanx-extender: topology-aware, gang-atomic, tier-preempting kube-scheduler extender"};
  std::string listen = "127.0.0.1:8888";
  std::string metrics_addr = ":8080";
  std::string kubeconfig, config_file, snapshot_file;
  size_t max_request_bytes = extender::ServerAddresses{}.max_body_bytes;
  int read_timeout_seconds = static_cast<int>(extender::ServerAddresses{}.read_timeout.count());
  double qps = 50;
  int burst = 100;
  log::LogOptions log_options;
  app.add_option("--listen", listen, "Address for the extender verbs (the scheduler's sidecar address)")
      ->capture_default_str();
  app.add_option("--metrics-addr", metrics_addr, "Address for /metrics, /healthz, /readyz and /debug/*")
      ->capture_default_str();
  app.add_option("--kubeconfig", kubeconfig, "Kubeconfig for the API server (default: in-cluster)");
  app.add_option("--config", config_file, "Extender configuration (YAML; docs/extender.md)");
  app.add_option("--cluster-snapshot", snapshot_file,
                 "Embedded mode: load nodes and pods from `kubectl get nodes,pods -A -o json` output instead of "
                 "watching an API server");
  app.add_option("--kube-api-qps", qps, "API client requests per second")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--kube-api-burst", burst, "API client burst")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--max-request-bytes", max_request_bytes,
                 "Largest verb request body accepted; larger ones get 413 (full-Nodes requests over 5,000 nodes are ~15 MB)")
      ->capture_default_str()->check(CLI::Range(size_t{1024}, size_t{1} << 32));
  app.add_option("--read-timeout-seconds", read_timeout_seconds,
                 "A request must arrive within this long; idle keep-alive connections close after it")
      ->capture_default_str()->check(CLI::Range(1, 3600));
  log::AddLogFlags(app, log_options);
  CLI11_PARSE(app, argc, argv);

  if (Status st = log::InitLogging(log_options); !st.ok()) return Fail(std::string(st.message()));
  auto logger = log::MakeLogger("extender");

  extender::ExtenderConfig config = extender::DefaultConfig();
  if (!config_file.empty()) {
    auto loaded = extender::LoadConfigFile(config_file);
    if (!loaded.ok()) return Fail(std::string(loaded.status().message()));
    config = std::move(*loaded);
  }
  extender::ServerAddresses addresses;
  addresses.max_body_bytes = max_request_bytes;
  addresses.read_timeout = std::chrono::seconds(read_timeout_seconds);
  if (Status st = extender::ParseHostPort(listen, &addresses.listen_host, &addresses.listen_port); !st.ok()) {
    return Fail("--listen " + std::string(st.message()));
  }
  if (Status st = extender::ParseHostPort(metrics_addr, &addresses.metrics_host, &addresses.metrics_port); !st.ok()) {
    return Fail("--metrics-addr " + std::string(st.message()));
  }
  if (snapshot_file.empty()) {
    // The API-server mode needs the Kubernetes client (core/kube); until it is wired in,
    // refuse clearly rather than run with an empty ledger.
    return Fail("watching an API server is not wired in yet; run in embedded mode with --cluster-snapshot FILE");
  }
  auto snapshot = extender::LoadSnapshotFile(snapshot_file);
  if (!snapshot.ok()) return Fail(std::string(snapshot.status().message()));

  metrics::Registry registry;
  (void)metrics::RegisterBuildInfo(registry, kVersion, kGitCommit);
  extender::RecordingWriter writer;  // embedded mode: writes are recorded, the ledger assumes them
  extender::StaticLeadership leadership(true);
  extender::Extender ext(config, RealClock::Instance(), writer, leadership);
  for (const auto& node : snapshot->nodes) {
    if (Status st = ext.OnNode(node); !st.ok()) {
      PHX_LOG_WARN(logger, "Skipped node", kv("node", node.name.str()), kv("err", st.message()));
    }
  }
  for (const auto& pod : snapshot->pods) ext.OnPod(pod);
  for (const auto& job : snapshot->training_jobs) ext.OnTrainingJob(job);
  ext.RecoverCommitted();
  PHX_LOG_INFO(logger, "Loaded cluster snapshot", kv("file", snapshot_file), kv("nodes", snapshot->nodes.size()),
               kv("pods", snapshot->pods.size()), kv("trainingJobs", snapshot->training_jobs.size()));
  // The ledger has its own copy: give the parsed file back to the OS (a 100,000-pod snapshot
  // is ~50 MB of text and objects; RSS budget DESIGN §6).
  snapshot = extender::Snapshot{};
  ::malloc_trim(0);

  extender::ExtenderServer server(ext, registry, addresses);
  if (Status st = server.Start(); !st.ok()) return Fail("starting HTTP servers: " + std::string(st.message()));
  server.SetReady(true);
  PHX_LOG_INFO(logger, "Serving", kv("listen", fmt::format("{}:{}", addresses.listen_host, server.port())),
               kv("metrics", fmt::format("{}:{}", addresses.metrics_host, server.metrics_port())));

  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
  std::thread ticker([&] {
    std::unique_lock lock(mu);
    while (!cv.wait_for(lock, std::chrono::milliseconds(100), [&] { return stop; })) {
      lock.unlock();
      ext.Tick();
      lock.lock();
    }
  });
  shutdown.OnShutdown([&] {
    server.SetReady(false);
    server.Shutdown();
    {
      std::lock_guard lock(mu);
      stop = true;
    }
    cv.notify_all();
  });
  shutdown.Wait();
  ticker.join();
  PHX_LOG_INFO(logger, "Stopped");
  return 0;
}
