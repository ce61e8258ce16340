// phalanx-extender: the scheduler extender beside kube-scheduler (docs/architecture.md §1, §2.5, §3).
// Two modes (docs/extender.md):
//   API-server mode (default): informers feed the ledger, writes go to the API server, the
//     Lease `phalanx-extender` picks the one active replica.
//   Embedded mode (--cluster-snapshot F): the ledger comes from a file, writes are recorded.
// Flags are validated before anything starts. The only place real clients, servers and the
// RealClock are constructed.
#include <malloc.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/ranges.h>

#include "core/base/clock.h"
#include "core/base/shutdown_signal.h"
#include "core/base/version.h"
#include "core/kube/api_error.h"
#include "core/kube/client.h"
#include "core/kube/config.h"
#include "core/kube/cpprest_transport.h"
#include "core/kube/event_recorder.h"
#include "core/kube/leader_election.h"
#include "core/kube/malloc_tuning.h"
#include "core/log/log.h"
#include "core/log/log_options.h"
#include "core/log/logger_factory.h"
#include "core/metrics/build_info.h"
#include "core/metrics/registry.h"
#include "extender/admission/gang_events.h"
#include "extender/config.h"
#include "extender/extender.h"
#include "extender/objects/snapshot.h"
#include "extender/queues/queue_status.h"
#include "extender/server/server.h"
#include "extender/sync/kube_leadership.h"
#include "extender/sync/kube_sync.h"
#include "extender/sync/scheduler_lease_follower.h"
#include "extender/webhook/webhook_cert_rotator.h"
#include "extender/webhook/webhook_server.h"
#include "extender/writes/budgeted_transport.h"
#include "extender/writes/kube_cluster_writer.h"
#include "extender/writes/kube_events.h"
#include "extender/writes/write_budget.h"

namespace {

using namespace phalanx;

constexpr int kExitBadConfig = 2;
constexpr int kExitRuntime = 1;
constexpr auto kTickPeriod = std::chrono::milliseconds(100);
constexpr auto kShutdownGrace = std::chrono::seconds(20);

int Fail(const std::string& message) {
  std::fprintf(stderr, "phalanx-extender: %s\n", message.c_str());
  return kExitBadConfig;
}

std::string Env(const char* name, std::string fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : std::move(fallback);
}

// "15s", "500ms", "1m", "2.5s" or plain seconds ("15"), as kube-scheduler's --leader-elect-* flags.
Result<Duration> ParseDuration(std::string_view text) {
  double scale = 1.0;
  std::string_view number = text;
  if (number.ends_with("ms")) {
    scale = 1e-3;
    number.remove_suffix(2);
  } else if (number.ends_with("s")) {
    number.remove_suffix(1);
  } else if (number.ends_with("m")) {
    scale = 60;
    number.remove_suffix(1);
  }
  double value = 0;
  auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (number.empty() || ec != std::errc() || ptr != number.data() + number.size() || value <= 0) {
    return InvalidArgumentError(fmt::format("\"{}\" is not a positive duration (e.g. 15s, 500ms)", text));
  }
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(value * scale));
}

// This pod's name ($POD_NAME, else the hostname, which is the pod name in Kubernetes).
std::string PodName() {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  return Env("POD_NAME", host);
}

std::string Identity() {
  std::random_device rd;
  return fmt::format("{}_{:08x}", PodName(), rd());
}

// Calls `tick` every kTickPeriod on its own thread until stopped.
class Ticker {
 public:
  explicit Ticker(std::function<void()> tick)
      : thread_([this, tick = std::move(tick)] {
          std::unique_lock lock(mu_);
          while (!cv_.wait_for(lock, kTickPeriod, [&] { return stop_; })) {
            lock.unlock();
            tick();
            lock.lock();
          }
        }) {}
  ~Ticker() { Stop(); }
  void Stop() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;  // last: starts after the members it uses
};

struct Flags {
  std::string listen = "127.0.0.1:8888";
  std::string metrics_addr = ":8080";
  std::string kubeconfig, config_file, snapshot_file;
  size_t max_request_bytes = extender::ServerAddresses{}.max_body_bytes;
  int read_timeout_seconds = static_cast<int>(extender::ServerAddresses{}.read_timeout.count());
  double qps = 50;
  int burst = 100;
  // The write pipeline (docs/extender.md, "Write pipeline"): its own budget, apart from reads.
  int writers = 32;
  double write_qps = 1000;
  int write_burst = 2000;
  double queue_status_interval_s = 10;
  bool leader_elect = true;
  std::string lease_name = "phalanx-extender";
  std::string lease_namespace = Env("POD_NAMESPACE", "phalanx-system");
  std::string lease_duration = "15s", renew_deadline = "10s", retry_period = "2s";
  bool standby_ready = false;
  std::string follow_scheduler_lease;  // NAMESPACE/NAME; "" = campaign on our own
  log::LogOptions log_options;
  // The gang-gate admission webhook (extender/webhook/webhook_server.h); off without --webhook-addr.
  std::string webhook_addr, webhook_tls_cert, webhook_tls_key;
  std::string webhook_scheduler_name = "phalanx-scheduler";
  std::optional<extender::WebhookServerOptions> webhook;  // validated from the four above
  // Self-managed certificate (extender/webhook/webhook_cert_rotator.h); replaces the two files.
  std::string webhook_cert_secret, webhook_configuration, webhook_service;
  std::string webhook_cert_dir = "/tmp/phalanx-webhook-certs";
  std::string webhook_cert_validity = "365d", webhook_cert_ca_validity = "3650d", webhook_cert_renew_before = "30d";
  std::optional<extender::WebhookCertOptions> webhook_certs;  // validated from the seven above
};

// Starts the webhook listener when configured; null when off. Failure: the message.
Result<std::unique_ptr<extender::WebhookServer>> StartWebhook(const Flags& flags, metrics::Registry& registry,
                                                              const std::shared_ptr<spdlog::logger>& logger) {
  if (!flags.webhook) return std::unique_ptr<extender::WebhookServer>();
  extender::WebhookServerOptions options = *flags.webhook;
  options.logger = logger;
  auto webhook = std::make_unique<extender::WebhookServer>(std::move(options), registry);
  if (flags.webhook_certs) return webhook;  // started by the certificate rotator (RunApiServer)
  if (Status st = webhook->Start(); !st.ok()) {
    return InvalidArgumentError("starting the webhook listener (--webhook-addr): " + std::string(st.message()));
  }
  PHX_LOG_INFO(logger, "Webhook serving", kv("webhook", fmt::format("{}:{}", flags.webhook->host, webhook->port())),
               kv("path", std::string(extender::kWebhookPath)));
  return webhook;
}

int RunEmbedded(ShutdownSignal& shutdown, const Flags& flags, const extender::ExtenderConfig& config,
                const extender::ServerAddresses& addresses, const std::shared_ptr<spdlog::logger>& logger) {
  if (flags.webhook_certs) return Fail("--webhook-cert-secret needs an API server (not with --cluster-snapshot)");
  auto snapshot = extender::LoadSnapshotFile(flags.snapshot_file);
  if (!snapshot.ok()) return Fail(std::string(snapshot.status().message()));

  metrics::Registry registry;
  (void)metrics::RegisterBuildInfo(registry, kVersion, kGitCommit);
  extender::RecordingWriter writer;  // embedded mode: writes are recorded, the ledger assumes them
  extender::StaticLeadership leadership(true);
  extender::Extender ext(config, RealClock::Instance(), writer, leadership, flags.writers);
  for (const auto& node : snapshot->nodes) {
    if (Status st = ext.OnNode(node); !st.ok()) {
      PHX_LOG_WARN(logger, "Skipped node", kv("node", node.name.str()), kv("err", st.message()));
    }
  }
  for (const auto& pod : snapshot->pods) ext.OnPod(pod);
  for (const auto& job : snapshot->training_jobs) ext.OnTrainingJob(job);
  ext.RecoverCommitted();
  PHX_LOG_INFO(logger, "Loaded cluster snapshot", kv("file", flags.snapshot_file), kv("nodes", snapshot->nodes.size()),
               kv("pods", snapshot->pods.size()), kv("trainingJobs", snapshot->training_jobs.size()));
  // The ledger has its own copy: give the parsed file back to the OS (a 100,000-pod snapshot
  // is ~50 MB of text and objects; RSS budget docs/architecture.md §6).
  snapshot = extender::Snapshot{};
  ::malloc_trim(0);

  extender::ExtenderServer server(ext, registry, addresses);
  if (Status st = server.Start(); !st.ok()) return Fail("starting HTTP servers: " + std::string(st.message()));
  auto webhook = StartWebhook(flags, registry, logger);
  if (!webhook.ok()) return Fail(std::string(webhook.status().message()));
  server.SetReady(true);
  PHX_LOG_INFO(logger, "Serving", kv("listen", fmt::format("{}:{}", addresses.listen_host, server.port())),
               kv("metrics", fmt::format("{}:{}", addresses.metrics_host, server.metrics_port())));

  Ticker ticker([&] { ext.Tick(); });
  shutdown.OnShutdown([&] {
    server.SetReady(false);
    server.Shutdown();
    if (*webhook) (*webhook)->Shutdown();
    ticker.Stop();
  });
  shutdown.Wait();
  PHX_LOG_INFO(logger, "Stopped");
  return 0;
}

int RunApiServer(ShutdownSignal& shutdown, const Flags& flags, const extender::ExtenderConfig& config,
                 const extender::ServerAddresses& addresses, const std::shared_ptr<spdlog::logger>& logger) {
  kube::LeaderElectionConfig lec;
  lec.lease_namespace = flags.lease_namespace;
  lec.lease_name = flags.lease_name;
  lec.identity = Identity();
  for (auto [flag, text, out] : {std::tuple{"--leader-elect-lease-duration", &flags.lease_duration, &lec.lease_duration},
                                 std::tuple{"--leader-elect-renew-deadline", &flags.renew_deadline, &lec.renew_deadline},
                                 std::tuple{"--leader-elect-retry-period", &flags.retry_period, &lec.retry_period}}) {
    auto d = ParseDuration(*text);
    if (!d.ok()) return Fail(fmt::format("{} {}", flag, d.status().message()));
    *out = *d;
  }
  if (flags.leader_elect) {
    if (Status st = kube::ValidateLeaderElectionConfig(lec); !st.ok()) return Fail(std::string(st.message()));
  }
  extender::FollowerOptions follow{.pod = PodName(), .election = lec};
  if (!flags.follow_scheduler_lease.empty()) {
    if (!flags.leader_elect) return Fail("--follow-scheduler-lease needs --leader-elect=true");
    if (Status st = extender::ParseLeaseRef(flags.follow_scheduler_lease, &follow.lease_namespace, &follow.lease_name);
        !st.ok()) {
      return Fail("--follow-scheduler-lease " + std::string(st.message()));
    }
  }
  auto kube_config = kube::ResolveConfig(flags.kubeconfig);
  if (!kube_config.ok()) return Fail(std::string(kube_config.status().message()));
  kube::ClientOptions client_options;
  client_options.qps = flags.qps;
  client_options.burst = flags.burst;
  client_options.user_agent = fmt::format("phalanx-extender/{}", kVersion);
  auto client = kube::KubeClient::Create(*kube_config, client_options);
  if (!client.ok()) return Fail(std::string(client.status().message()));

  // Writes go through their own client: its own connections, the write budget (taken per
  // request in the write task's lane) and a per-request timeout derived from httpTimeout.
  extender::WriteBudget write_budget(flags.write_qps, flags.write_burst);
  const std::chrono::milliseconds write_timeout = config.WriteRequestTimeout();
  auto write_transport = kube::MakeCpprestTransport(*kube_config, {.default_timeout = write_timeout});
  if (!write_transport.ok()) return Fail(std::string(write_transport.status().message()));
  kube::ClientOptions write_options = client_options;
  write_options.qps = 0;  // the budget is in BudgetedTransport
  write_options.timeout = write_timeout;
  kube::KubeClient write_client(
      std::make_shared<extender::BudgetedTransport>(std::shared_ptr<kube::Transport>(std::move(*write_transport)),
                                                    write_budget, write_timeout),
      *kube_config, write_options);

  metrics::Registry registry;
  (void)metrics::RegisterBuildInfo(registry, kVersion, kGitCommit);
  extender::KubeClusterWriter writer(write_client, &registry, logger);
  extender::ElectorLeadership leadership;
  extender::Extender ext(config, RealClock::Instance(), writer, leadership, flags.writers);
  extender::ExtenderServer server(ext, registry, addresses);
  if (Status st = server.Start(); !st.ok()) return Fail("starting HTTP servers: " + std::string(st.message()));
  auto webhook = StartWebhook(flags, registry, logger);
  if (!webhook.ok()) return Fail(std::string(webhook.status().message()));
  // Self-managed certificate: every replica keeps the Secret, the caBundle and its files current
  // and starts its listener once it has a pair.
  std::unique_ptr<extender::WebhookCertRotator> cert_rotator;
  if (flags.webhook_certs) {
    extender::WebhookCertOptions cert_options = *flags.webhook_certs;
    cert_options.logger = logger;
    cert_rotator = std::make_unique<extender::WebhookCertRotator>(**client, std::move(cert_options), &registry);
    cert_rotator->Start([&, started = false]() mutable {
      if (started) return;  // later pairs: the listener re-reads the files itself
      if (Status st = (*webhook)->Start(); !st.ok()) {
        PHX_LOG_ERROR(logger, "Webhook listener did not start", kv("err", st.message()));
        return;
      }
      started = true;
      PHX_LOG_INFO(logger, "Webhook serving", kv("webhook", fmt::format("{}:{}", flags.webhook->host, (*webhook)->port())),
                   kv("path", std::string(extender::kWebhookPath)), kv("certificate", "self-managed"));
    });
  }
  if (auto family = registry.AddGauge("phalanx_extender_leader",
                                      "1 while this replica is the active extender (holds the Lease and is synced).");
      family.ok()) {
    if (auto g = (*family)->WithLabels({}); g.ok()) (*g)->SetCallback([&] { return leadership.IsLeader() ? 1.0 : 0.0; });
  }

  extender::ClusterSyncOptions sync_options;
  sync_options.queue_base = config.team_queues;
  if (auto probe = (*client)->List(kube::resources::kPriorityClasses, "", {.limit = 1});
      !probe.ok() && kube::IsForbidden(probe.status())) {
    // Pods carry spec.priority wherever the Priority admission plugin runs (always, in practice).
    PHX_LOG_WARN(logger, "Not allowed to list PriorityClasses; using each pod's spec.priority only",
                 kv("err", probe.status().message()));
    sync_options.watch_priority_classes = false;
  }
  if (auto probe = (*client)->List(kube::Resource{"policy", "v1", "poddisruptionbudgets", true, "PodDisruptionBudget"},
                                   "", {.limit = 1});
      !probe.ok() && kube::IsForbidden(probe.status())) {
    PHX_LOG_WARN(logger, "Not allowed to list PodDisruptionBudgets; preemption learns of them from refused evictions",
                 kv("err", probe.status().message()));
    sync_options.watch_budgets = false;
  }
  if (auto probe = (*client)->List(kube::resources::kNamespaces, "", {.limit = 1});
      !probe.ok() && kube::IsForbidden(probe.status())) {
    PHX_LOG_WARN(logger, "Not allowed to list namespaces; GpuQueue namespaceSelectors select nothing",
                 kv("err", probe.status().message()));
    sync_options.watch_namespaces = false;
  }
  sync_options.registry = &registry;
  extender::ClusterSync sync(**client, ext, logger, sync_options);
  ext.SetBudgetSource(&sync);
  // Events (events.k8s.io/v1): preemptions from the verbs, gang admission from the ledger.
  kube::EventRecorder recorder(**client, {.reporting_controller = "phalanx.io/extender", .reporting_instance = PodName()});
  extender::KubeEventSink event_sink(recorder);
  ext.SetEventSink(&event_sink);
  sync.SetEventSink(&event_sink);
  extender::QueueStatusWriter queue_status(
      write_client, [&] { return ext.QueueStatuses(); },
      [&] {
        extender::QueueObjects objects;
        for (const auto& q : sync.queue_watch().Queues()) objects.by_name[q->name] = {q->generation, q->error};
        objects.set_error = sync.queue_watch().SetError();
        return objects;
      },
      [&] { return leadership.IsLeader(); }, logger,
      {.period = std::chrono::milliseconds(std::min<int64_t>(1000, static_cast<int64_t>(flags.queue_status_interval_s * 1000))),
       .min_interval = std::chrono::milliseconds(static_cast<int64_t>(flags.queue_status_interval_s * 1000))});
  extender::GangEvents gang_events(event_sink);
  recorder.Start();
  sync.Start();
  queue_status.Start();
  // The Lease's namespace is never created here: when it is missing the extender says so in
  // /readyz and its log, and stays a standby until it appears.
  auto lease_namespace_missing = [&] {
    auto ns = (*client)->Get(kube::resources::kNamespaces, "", lec.lease_namespace);
    return !ns.ok() && IsNotFound(ns.status());
  };
  bool lease_ns_missing = flags.leader_elect && flags.follow_scheduler_lease.empty() && lease_namespace_missing();
  if (lease_ns_missing) {
    PHX_LOG_ERROR(logger, "Lease namespace not found; not creating it", kv("namespace", lec.lease_namespace));
  }
  auto last_ns_check = std::chrono::steady_clock::now();
  std::unique_ptr<kube::LeaderElector> elector;
  std::unique_ptr<extender::SchedulerLeaseFollower> follower;  // replaces `elector` (scheduler_lease_follower.h)
  if (!flags.follow_scheduler_lease.empty()) {
    follower = std::make_unique<extender::SchedulerLeaseFollower>(
        **client, leadership, follow,
        extender::FollowerCallbacks{
            [&] { leadership.SetActive(false); },
            [&](const Status& st) {
              PHX_LOG_ERROR(logger, "Lost the Lease; exiting", kv("err", st.message()));
              spdlog::apply_all([](const std::shared_ptr<spdlog::logger>& l) { l->flush(); });
              std::fflush(nullptr);
              std::_Exit(kExitRuntime);
            },
            [&](const std::string& holder, extender::FollowAction action) {
              PHX_LOG_INFO(logger, "Scheduler Lease holder", kv("lease", flags.follow_scheduler_lease),
                           kv("holder", holder), kv("action", std::string(extender::FollowActionName(action))));
            }});
  } else if (flags.leader_elect) {
    elector = std::make_unique<kube::LeaderElector>(
        **client, lec,
        kube::LeaderCallbacks{
            [&] { PHX_LOG_INFO(logger, "Acquired the Lease", kv("lease", lec.lease_namespace + "/" + lec.lease_name),
                               kv("identity", lec.identity)); },
            nullptr,
            [&](const std::string& holder) { PHX_LOG_INFO(logger, "Lease held by another replica", kv("holder", holder)); }});
    leadership.Attach(elector.get());
  }
  PHX_LOG_INFO(logger, "Serving", kv("version", kVersion),
               kv("listen", fmt::format("{}:{}", addresses.listen_host, server.port())),
               kv("metrics", fmt::format("{}:{}", addresses.metrics_host, server.metrics_port())),
               kv("leaderElect", flags.leader_elect), kv("identity", lec.identity));

  // Becomes active once synced and holding the Lease: committed gangs are completed first,
  // then admission and binds start. /readyz follows (a standby is ready only with --standby-ready).
  bool synced_logged = false;
  Ticker ticker([&] {
    const bool synced = sync.Synced();
    if (synced && !synced_logged) {
      synced_logged = true;
      PHX_LOG_INFO(logger, "Informers synced");
    }
    if (synced && !leadership.active() && leadership.HoldsLease()) {
      ext.RecoverCommitted();
      leadership.SetActive(true);
      PHX_LOG_INFO(logger, "Active extender: admitting gangs and binding");
    }
    if (lease_ns_missing && std::chrono::steady_clock::now() - last_ns_check > std::chrono::seconds(10)) {
      last_ns_check = std::chrono::steady_clock::now();
      lease_ns_missing = lease_namespace_missing();
      if (!lease_ns_missing) PHX_LOG_INFO(logger, "Lease namespace found", kv("namespace", lec.lease_namespace));
    }
    const bool ready = synced && (leadership.IsLeader() || flags.standby_ready);
    std::vector<std::string> why;  // /readyz: why this replica is not active, in words
    if (!synced) why.push_back("informers not synced: " + sync.Pending());
    if (lease_ns_missing) {
      why.push_back(fmt::format("lease namespace {} not found (create it or set --lease-namespace)", lec.lease_namespace));
    }
    if (synced && !leadership.IsLeader()) {
      why.push_back(fmt::format("standby: Lease {}/{} held by another replica", lec.lease_namespace, lec.lease_name));
    }
    for (std::string& note : sync.Notes()) why.push_back(std::move(note));
    server.SetReadiness(ready, fmt::format("{}", fmt::join(why, "; ")));
    if (synced) ext.Tick();
    if (synced && leadership.IsLeader()) {
      ext.ReadLedger([&](const extender::Ledger& l) { gang_events.Observe(l, RealClock::Instance().Now()); });
    }
  });

  std::thread election;
  if (follower) election = std::thread([&] { follower->Run(); });
  if (elector) {
    election = std::thread([&] {
      Status st = elector->Run();
      if (!st.ok() && !shutdown.shutdown_started()) {
        // Work done without the Lease is unsafe, and a graceful stop may wait on the very API
        // server we lost: exit at once (held binds fail; the scheduler retries them with the
        // new leader) and let Kubernetes restart us as a standby.
        PHX_LOG_ERROR(logger, "Lost the Lease; exiting", kv("err", st.message()));
        spdlog::apply_all([](const std::shared_ptr<spdlog::logger>& l) { l->flush(); });
        std::fflush(nullptr);
        std::_Exit(kExitRuntime);
      }
    });
  }
  shutdown.OnShutdown([&] {
    // Stopping informers waits for their requests: bound it when the API server is away.
    std::thread([] {
      std::this_thread::sleep_for(kShutdownGrace);
      std::fputs("phalanx-extender: graceful shutdown took too long; exiting\n", stderr);
      std::_Exit(kExitRuntime);
    }).detach();
    server.SetReady(false);
    ticker.Stop();
    if (elector) elector->Stop();  // releases the Lease so a standby takes over at once
    if (follower) follower->Stop();
    server.Shutdown();
    if (cert_rotator) cert_rotator->Stop();
    if (*webhook) (*webhook)->Shutdown();
    queue_status.Stop();
    sync.Stop();
    recorder.Stop();
  });
  shutdown.Wait();
  if (election.joinable()) election.join();
  ext.DrainForTest();  // queued API writes finish before the client goes away
  PHX_LOG_INFO(logger, "Stopped");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  ShutdownSignal shutdown;  // first: before any thread exists
  kube::TuneMallocForLargeResponses();

  CLI::App app{"phalanx-extender: topology-aware, gang-atomic, tier-preempting kube-scheduler extender"};
  Flags f;
  app.add_option("--listen", f.listen, "Address for the extender verbs (the scheduler's sidecar address)")
      ->capture_default_str();
  app.add_option("--metrics-addr", f.metrics_addr, "Address for /metrics, /healthz, /readyz and /debug/*")
      ->capture_default_str();
  app.add_option("--kubeconfig", f.kubeconfig, "Kubeconfig (default: $KUBECONFIG, in-cluster, ~/.kube/config)");
  app.add_option("--config", f.config_file, "Extender configuration (YAML; docs/extender.md)");
  app.add_option("--cluster-snapshot", f.snapshot_file,
                 "Embedded mode: load nodes and pods from `kubectl get nodes,pods -A -o json` output instead of "
                 "watching an API server");
  app.add_option("--kube-api-qps", f.qps, "API client requests per second (reads: informers, Lease; writes: --write-qps)")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--kube-api-burst", f.burst, "API client burst")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--writers", f.writers,
                 "Threads making API writes (binds, devices patches, gate lifts, evictions); one of them serves "
                 "single-pod binds only")
      ->capture_default_str()->check(CLI::Range(2, 256));
  app.add_option("--write-qps", f.write_qps,
                 "Write requests per second to the API server (separate from --kube-api-qps, which bounds reads)")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--queue-status-interval", f.queue_status_interval_s,
                 "Seconds between two status writes of one GpuQueue (written only when changed)")
      ->capture_default_str()->check(CLI::Range(0.1, 3600.0));
  app.add_option("--write-burst", f.write_burst, "Write requests allowed at once above --write-qps")
      ->capture_default_str()->check(CLI::Range(1, 1000000));
  app.add_option("--max-request-bytes", f.max_request_bytes,
                 "Largest verb request body accepted; larger ones get 413 (full-Nodes requests over 5,000 nodes are ~15 MB)")
      ->capture_default_str()->check(CLI::Range(size_t{1024}, size_t{1} << 32));
  app.add_option("--read-timeout-seconds", f.read_timeout_seconds,
                 "A request must arrive within this long; idle keep-alive connections close after it")
      ->capture_default_str()->check(CLI::Range(1, 3600));
  app.add_flag("--leader-elect", f.leader_elect,
                 "Elect one active extender on a Lease (only it admits gangs, lifts gates and binds)")
      ->capture_default_str();
  app.add_option("--leader-elect-resource-name,--lease-name", f.lease_name, "Name of the Lease")->capture_default_str();
  app.add_option("--leader-elect-resource-namespace,--lease-namespace", f.lease_namespace,
                 "Namespace of the Lease (default: $POD_NAMESPACE, else phalanx-system)")
      ->capture_default_str();
  app.add_option("--leader-elect-lease-duration", f.lease_duration,
                 "How long a standby waits after the last renewal before taking the Lease")
      ->capture_default_str();
  app.add_option("--leader-elect-renew-deadline", f.renew_deadline,
                 "The leader exits if it could not renew for this long")
      ->capture_default_str();
  app.add_option("--leader-elect-retry-period", f.retry_period, "Interval of acquire/renew attempts")
      ->capture_default_str();
  app.add_flag("--standby-ready", f.standby_ready,
                 "Report /readyz OK on a synced standby replica too (default: only the active extender is ready)")
      ->capture_default_str();
  app.add_option("--follow-scheduler-lease", f.follow_scheduler_lease,
                 "NAMESPACE/NAME of kube-scheduler's Lease: campaign for our Lease only while the kube-scheduler of "
                 "this pod ($POD_NAME, else hostname) holds it (scheduler replicas > 1)");
  app.add_option("--webhook-addr", f.webhook_addr,
                 "HOST:PORT of the gang-gate admission webhook (HTTPS, POST /mutate-pods); off when not given");
  app.add_option("--webhook-tls-cert", f.webhook_tls_cert, "Webhook serving certificate (PEM, may hold the chain); "
                 "re-read when the file changes");
  app.add_option("--webhook-tls-key", f.webhook_tls_key, "Webhook private key (PEM)");
  app.add_option("--webhook-scheduler-name", f.webhook_scheduler_name,
                 "The webhook gates only gang pods with this spec.schedulerName")
      ->capture_default_str();
  app.add_option("--webhook-cert-secret", f.webhook_cert_secret,
                 "NAMESPACE/NAME of the Secret holding the self-managed webhook CA and certificate (made, shared "
                 "by the replicas and renewed by the extender); replaces --webhook-tls-cert/--webhook-tls-key");
  app.add_option("--webhook-configuration", f.webhook_configuration,
                 "MutatingWebhookConfiguration whose webhooks get the self-managed CA bundle (caBundle)");
  app.add_option("--webhook-service", f.webhook_service,
                 "Service of the webhook, in the Secret's namespace: the certificate's DNS names");
  app.add_option("--webhook-cert-dir", f.webhook_cert_dir,
                 "Directory where the self-managed certificate and key are written for the listener")
      ->capture_default_str();
  app.add_option("--webhook-cert-validity", f.webhook_cert_validity,
                 "Validity of a self-managed serving certificate (s, m, h or d)")->capture_default_str();
  app.add_option("--webhook-cert-ca-validity", f.webhook_cert_ca_validity,
                 "Validity of the self-managed CA (s, m, h or d)")->capture_default_str();
  app.add_option("--webhook-cert-renew-before", f.webhook_cert_renew_before,
                 "Renew the self-managed CA or serving certificate this long before it expires")->capture_default_str();
  log::AddLogFlags(app, f.log_options);
  CLI11_PARSE(app, argc, argv);

  if (Status st = log::InitLogging(f.log_options); !st.ok()) return Fail(std::string(st.message()));
  auto logger = log::MakeLogger("extender");

  extender::ExtenderConfig config = extender::DefaultConfig();
  if (!f.config_file.empty()) {
    auto loaded = extender::LoadConfigFile(f.config_file);
    if (!loaded.ok()) return Fail(std::string(loaded.status().message()));
    config = std::move(*loaded);
  }
  extender::ServerAddresses addresses;
  addresses.max_body_bytes = f.max_request_bytes;
  addresses.read_timeout = std::chrono::seconds(f.read_timeout_seconds);
  if (Status st = extender::ParseHostPort(f.listen, &addresses.listen_host, &addresses.listen_port); !st.ok()) {
    return Fail("--listen " + std::string(st.message()));
  }
  if (Status st = extender::ParseHostPort(f.metrics_addr, &addresses.metrics_host, &addresses.metrics_port); !st.ok()) {
    return Fail("--metrics-addr " + std::string(st.message()));
  }
  auto certs = extender::WebhookCertOptionsFromFlags(f.webhook_cert_secret, f.webhook_configuration, f.webhook_service,
                                                    f.webhook_cert_dir, f.webhook_cert_validity,
                                                    f.webhook_cert_ca_validity, f.webhook_cert_renew_before);
  if (!certs.ok()) return Fail(std::string(certs.status().message()));
  f.webhook_certs = std::move(*certs);
  if (f.webhook_certs) {
    if (!f.webhook_tls_cert.empty() || !f.webhook_tls_key.empty()) {
      return Fail("--webhook-cert-secret and --webhook-tls-cert/--webhook-tls-key exclude each other");
    }
    auto managed = extender::WebhookOptionsForManagedCerts(f.webhook_addr, f.webhook_cert_dir, f.webhook_scheduler_name);
    if (!managed.ok()) return Fail(std::string(managed.status().message()));
    f.webhook = std::move(*managed);
  } else {
    auto webhook = extender::WebhookOptionsFromFlags(f.webhook_addr, f.webhook_tls_cert, f.webhook_tls_key,
                                                    f.webhook_scheduler_name);
    if (!webhook.ok()) return Fail(std::string(webhook.status().message()));
    f.webhook = std::move(*webhook);
  }
  if (!f.snapshot_file.empty()) return RunEmbedded(shutdown, f, config, addresses, logger);
  return RunApiServer(shutdown, f, config, addresses, logger);
}
