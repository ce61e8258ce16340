#include "device-plugin/cmd/daemon.h"

#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>
#include <string>

#include <fmt/format.h>

#include "core/http/http_server.h"
#include "core/log/log.h"
#include "core/log/logger_factory.h"
#include "core/metrics/registry.h"
#include "core/placement/topology_bandwidth.h"
#include "device-plugin/cmd/hangup_signal.h"
#include "device-plugin/health/health_monitor.h"
#include "device-plugin/nvml/dl_nvml.h"
#include "device-plugin/nvml/gpu_discovery.h"
#include "device-plugin/nvml/nvml_session.h"
#include "device-plugin/plugin/config.h"
#include "device-plugin/plugin/device_model.h"
#include "device-plugin/plugin/lock_file.h"
#include "device-plugin/plugin/node_topology_reader.h"
#include "device-plugin/plugin/plugin_manager.h"
#include "device-plugin/plugin/plugin_metrics.h"
#include "device-plugin/publish/kube_node_api.h"
#include "device-plugin/publish/kube_pod_watch.h"
#include "device-plugin/publish/node_events.h"
#include "device-plugin/publish/pod_cache.h"
#include "device-plugin/publish/publisher.h"
#include "device-plugin/usage/usage_metrics.h"
#include "device-plugin/usage/usage_monitor.h"

namespace phalanx::device_plugin {
namespace {

void Fatal(const std::string& message) { std::fprintf(stderr, "phalanx-device-plugin: %s\n", message.c_str()); }

Result<Config> EffectiveConfig(const Options& o) {
  Config c;
  if (!o.config_file.empty()) {
    PHX_ASSIGN_OR_RETURN(c, LoadConfigFile(o.config_file));
  }
  if (!o.mig_strategy.empty()) {
    PHX_ASSIGN_OR_RETURN(c.mig_strategy, ParseMigStrategy(o.mig_strategy));
  }
  if (o.fail_on_init_error) c.fail_on_init_error = *o.fail_on_init_error;
  if (o.publish_interval_seconds != 0) {
    if (o.publish_interval_seconds < 1) {
      return InvalidArgumentError(fmt::format("--publish-interval: must be >= 1 s (≤ 1 write/s), got {}",
                                              o.publish_interval_seconds));
    }
    c.publish_interval_seconds = o.publish_interval_seconds;
  }
  return c;
}

// Why the daemon is not ready, or empty.
class Readiness {
 public:
  void Set(std::string reason) {
    std::lock_guard<std::mutex> lock(mu_);
    reason_ = std::move(reason);
  }
  std::string Get() const {
    std::lock_guard<std::mutex> lock(mu_);
    return reason_;
  }

 private:
  mutable std::mutex mu_;
  std::string reason_ = "starting";
};

// Everything that depends on the config file; SIGHUP replaces it as a whole (NVML, the
// health table, the API client and the HTTP server outlive it).
struct Generation {
  std::unique_ptr<const Config> config;
  std::vector<ResourceSpec> resources;
  std::unique_ptr<HealthMonitor> monitor;
  std::unique_ptr<Publisher> publisher;
  std::unique_ptr<PluginManager> manager;

  void Stop() {
    manager->Stop();  // first: kubelet stops seeing our sockets before anything else goes
    if (publisher) publisher->Stop();
    monitor->Stop();
  }
};

// What generations share.
struct NodeContext {
  const Options* options = nullptr;
  nvml::DlNvml* nvml = nullptr;
  const nvml::GpuInventory* inventory = nullptr;
  std::optional<topology::NodeTopology> topology;
  std::shared_ptr<const placement::BandwidthMatrix> bandwidth;
  bool mig_capable = false;
  HealthTable* health = nullptr;
  NodeApi* node_api = nullptr;  // null = not publishing
  const PodCache* pods = nullptr;  // the node's pods, kept by a watch (set with node_api)
  NodeEvents* events = nullptr;    // Events on the node (set with node_api)
  PodResourcesClient* pod_resources = nullptr;
  const PluginMetrics* metrics = nullptr;
  const UsageMonitor* usage = nullptr;  // null when sampling is off
};

// Starts the components for `config`, whose resources BuildResources already accepted.
std::unique_ptr<Generation> StartGeneration(const NodeContext& ctx, Config config,
                                            std::vector<ResourceSpec> resources) {
  auto g = std::make_unique<Generation>();
  g->config = std::make_unique<const Config>(std::move(config));
  g->resources = std::move(resources);
  g->monitor = std::make_unique<HealthMonitor>(*ctx.nvml, *ctx.inventory, g->config->health, *ctx.health,
                                               ctx.metrics, log::MakeLogger("device_plugin.health"));
  g->monitor->Start();
  if (ctx.node_api != nullptr) {
    g->publisher = std::make_unique<Publisher>(
        PublisherOptions{.node_name = ctx.options->node_name,
                         .interval = std::chrono::milliseconds(
                             static_cast<int64_t>(g->config->publish_interval_seconds * 1000)),
                         .usage = ctx.usage == nullptr
                                      ? std::function<std::shared_ptr<const UsageSummaries>()>()
                                      : [usage = ctx.usage] { return usage->Summaries(); }},
        *ctx.node_api, *ctx.pods, ctx.pod_resources, ctx.topology, ctx.mig_capable, g->resources, *ctx.health, ctx.metrics,
        log::MakeLogger("device_plugin.publish"));
  }
  ServerDeps deps{.config = g->config.get(), .health = ctx.health, .bandwidth = ctx.bandwidth,
                  .pods = g->publisher.get(), .metrics = ctx.metrics,
                  .logger = log::MakeLogger("device_plugin.kubelet")};
  if (ctx.events != nullptr) {
    deps.on_plan_miss = [events = ctx.events](const std::string& resource, const PlanMiss& m) {
      events->PlanMiss(resource, m);
    };
  }
  g->manager = std::make_unique<PluginManager>(
      ManagerOptions{.plugin_dir = DevicePluginDir(*ctx.options),
                     .poll_interval = std::chrono::milliseconds(ctx.options->kubelet_poll_ms),
                     .on_register = ctx.events == nullptr
                                        ? std::function<void(const ResourceSpec&, const Status&)>()
                                        : [events = ctx.events](const ResourceSpec& r, const Status& s) {
                                            events->Registration(r.name, r.devices.size(), s);
                                          }},
      g->resources, deps);
  g->manager->Start();
  if (g->publisher) g->publisher->Start();
  return g;
}

// The running generation, swapped on reload; /readyz reads it from the HTTP thread.
class CurrentGeneration {
 public:
  // Why the running generation is not ready, or "".
  std::string NotReadyReason() const {
    std::lock_guard<std::mutex> lock(mu_);
    if (!gen_) return "reloading configuration";
    if (!gen_->manager->AllRegistered()) return "not registered with kubelet";
    return gen_->publisher ? gen_->publisher->DegradedReason() : "";
  }
  const Config* config() const {
    std::lock_guard<std::mutex> lock(mu_);
    return gen_ ? gen_->config.get() : nullptr;
  }
  std::unique_ptr<Generation> Take() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::move(gen_);
  }
  void Set(std::unique_ptr<Generation> g) {
    std::lock_guard<std::mutex> lock(mu_);
    gen_ = std::move(g);
  }

 private:
  mutable std::mutex mu_;
  std::unique_ptr<Generation> gen_;
};

// SIGHUP: re-read --config (flags still override it). An invalid file, or one whose
// resources cannot be built, is rejected and the running generation keeps serving;
// an unchanged one is a no-op; otherwise the servers restart and re-register.
void Reload(const Options& o, const NodeContext& ctx, CurrentGeneration& current, spdlog::logger* logger) {
  auto outcome = [&](const char* result) { ctx.metrics->Inc(ctx.metrics->config_reloads, {result}); };
  auto config = EffectiveConfig(o);
  if (!config.ok()) {
    PHX_LOG_ERROR(logger, "Config reload rejected; keeping the running configuration", kv("err", config.status()));
    return outcome("rejected");
  }
  const Config* running = current.config();
  if (running != nullptr && *running == *config) {
    PHX_LOG_INFO(logger, "Config reload: configuration unchanged");
    return outcome("unchanged");
  }
  auto resources = BuildResources(*ctx.inventory, *config);
  if (!resources.ok()) {
    PHX_LOG_ERROR(logger, "Config reload rejected: cannot advertise this node's GPUs with it; keeping the running "
                  "configuration", kv("err", resources.status()));
    return outcome("rejected");
  }
  PHX_LOG_INFO(logger, "Config reload: restarting kubelet servers with the new configuration",
               kv("mig_strategy", MigStrategyName(config->mig_strategy)), kv("resources", resources->size()));
  if (auto old = current.Take()) old->Stop();
  current.Set(StartGeneration(ctx, std::move(config).value(), std::move(resources).value()));
  outcome("applied");
}

}  // namespace

int RunDaemon(const Options& o, ShutdownSignal& shutdown) {
  auto config_or = EffectiveConfig(o);
  if (!config_or.ok()) {
    Fatal(fmt::format("invalid configuration: {}", config_or.status().message()));
    return kExitBadConfig;
  }
  if (Status s = ValidateUsageFlags(o); !s.ok()) {
    Fatal(fmt::format("invalid configuration: {}", s.message()));
    return kExitBadConfig;
  }
  Config config = std::move(config_or).value();
  if (Status s = log::InitLogging(o.log); !s.ok()) {
    Fatal(s.message());
    return kExitBadConfig;
  }
  auto logger = log::MakeLogger("device_plugin");
  auto listen = ParseListenAddress(o.metrics_addr);
  if (!listen.ok()) {
    Fatal(listen.status().message());
    return kExitBadConfig;
  }

  const std::string lock_path = LockFilePath(o);
  auto lock = LockFile::Acquire(lock_path);
  if (!lock.ok()) {
    Fatal(lock.status().message());
    return kExitFailure;
  }

  metrics::Registry registry;
  auto metrics_or = PluginMetrics::Register(registry);
  if (!metrics_or.ok()) {
    Fatal(metrics_or.status().ToString());
    return kExitFailure;
  }
  std::unique_ptr<PluginMetrics> pm = std::move(metrics_or).value();
  auto usage_counters = UsageCounters::Register(registry);
  if (!usage_counters.ok()) {
    Fatal(usage_counters.status().ToString());
    return kExitFailure;
  }
  std::unique_ptr<UsageMonitor> usage;  // set once NVML is up (and sampling is on)
  std::atomic<const UsageMonitor*> usage_view{nullptr};  // what /metrics reads

  Readiness readiness;
  CurrentGeneration current;
  std::string publish_disabled;  // why publishing cannot run at all (degraded), or ""
  // GETs only (/metrics, /healthz, /readyz): a body over 4 KiB is refused (413) unread.
  http::HttpServer http(http::ServerOptions{
      .address = listen->host, .port = listen->port, .max_body_bytes = 4 * 1024, .io_threads = 1});
  http::AddStandardEndpoints(http, http::StandardEndpoints{
      .ready = [&](std::string* reason) {
        std::string r = readiness.Get();
        if (r.empty()) r = current.NotReadyReason();
        if (r.empty()) r = publish_disabled;
        if (!r.empty() && reason) *reason = r;
        return r.empty();
      },
      .metrics = [&] {
        std::string out = registry.Expose();
        if (const UsageMonitor* u = usage_view.load()) AppendUsageMetrics(out, o.node_name, *u->Snapshot());
        return out;
      }});
  if (Status s = http.Start(); !s.ok()) {
    Fatal(fmt::format("--metrics-addr {}: {}", o.metrics_addr, s.message()));
    return kExitFailure;
  }
  PHX_LOG_INFO(logger, "Serving metrics", kv("addr", fmt::format("{}:{}", listen->host, http.port())));

  // NVML: a missing driver is fatal unless failOnInitError is false (then idle, not ready).
  std::unique_ptr<nvml::DlNvml> nvml;
  std::unique_ptr<nvml::NvmlSession> session;
  nvml::GpuInventory inventory;
  Status init = [&]() -> Status {
    PHX_ASSIGN_OR_RETURN(nvml, nvml::DlNvml::Load(o.nvml_library));
    PHX_ASSIGN_OR_RETURN(session, nvml::NvmlSession::Open(*nvml));
    PHX_ASSIGN_OR_RETURN(inventory, nvml::DiscoverGpus(*nvml));
    return OkStatus();
  }();
  if (!init.ok()) {
    if (config.fail_on_init_error) {
      Fatal(fmt::format("NVML initialisation failed: {} (is the NVIDIA driver installed? set "
                        "--fail-on-init-error=false to run without GPUs)", init.message()));
      http.Shutdown();
      return kExitFailure;
    }
    PHX_LOG_ERROR(logger, "NVML initialisation failed; idling without GPUs", kv("err", init));
    readiness.Set("NVML initialisation failed: " + init.message());
    shutdown.OnShutdown([&] { http.Shutdown(std::chrono::seconds(2)); });
    shutdown.Wait();
    return kExitOk;
  }
  PHX_LOG_INFO(logger, "Discovered GPUs", kv("gpus", inventory.gpus.size()), kv("driver", inventory.driver_version));

  auto resources = BuildResources(inventory, config);
  if (!resources.ok()) {
    Fatal(fmt::format("cannot advertise this node's GPUs: {}", resources.status().message()));
    http.Shutdown();
    return kExitBadConfig;
  }
  NodeContext ctx{.options = &o, .nvml = nvml.get(), .inventory = &inventory, .metrics = pm.get()};
  auto topo = TopologyFromInventory(inventory);
  auto bandwidth = std::make_shared<placement::BandwidthMatrix>(static_cast<int>(inventory.gpus.size()));
  if (topo.ok()) {
    *bandwidth = placement::BandwidthFromTopology(*topo);
    ctx.topology = *topo;
  } else {
    PHX_LOG_WARN(logger, "Failed to build the GPU topology; preferring devices without it", kv("err", topo.status()));
  }
  ctx.bandwidth = bandwidth;
  for (const auto& g : inventory.gpus) ctx.mig_capable = ctx.mig_capable || g.mig_capable;
  HealthTable health;
  ctx.health = &health;

  // Publishing: without API access the node keeps serving kubelet; /readyz says why.
  // The pod watch outlives config reloads: a SIGHUP does not list the node's pods again.
  std::unique_ptr<KubeNodeApi> node_api;
  // Also without publishing: utilisation is attributed to pods through it.
  auto pod_resources = std::make_unique<PodResourcesClient>(PodResourcesSocket(o));
  PodCache pod_cache;
  std::unique_ptr<KubePodWatch> pod_watch;
  std::unique_ptr<NodeEvents> events;
  if (o.publish) {
    if (o.node_name.empty()) {
      publish_disabled = "publishing degraded: no --node-name (or env NODE_NAME)";
    } else if (auto api = KubeNodeApi::Create(o.kubeconfig); !api.ok()) {
      publish_disabled = "publishing degraded: " + api.status().message();
    } else {
      node_api = std::move(api).value();
      pod_watch = std::make_unique<KubePodWatch>(node_api->client(), o.node_name, pod_cache);
      pod_watch->Start();
      events = std::make_unique<NodeEvents>(node_api->client(), o.node_name, health);
      events->Start();
      ctx.events = events.get();
      ctx.node_api = node_api.get();
      ctx.pods = &pod_cache;
      ctx.pod_resources = pod_resources.get();
    }
    if (!publish_disabled.empty()) PHX_LOG_WARN(logger, "Not publishing node GPU state", kv("reason", publish_disabled));
  }

  if (o.utilisation_interval_seconds > 0) {
    usage = std::make_unique<UsageMonitor>(
        UsageMonitorOptions{
            .node_name = o.node_name,
            .interval = std::chrono::milliseconds(static_cast<int64_t>(o.utilisation_interval_seconds * 1000)),
            .idle = {.threshold_percent = o.idle_threshold_percent,
                     .window = std::chrono::milliseconds(static_cast<int64_t>(o.idle_window_seconds * 1000))}},
        *nvml, inventory,
        UsageMonitorDeps{.pod_resources = pod_resources.get(),
                         .pods = ctx.pods, .api = ctx.node_api, .events = ctx.events, .counters = &*usage_counters},
        log::MakeLogger("device_plugin.utilisation"));
    usage->Start();
    usage_view.store(usage.get());
    ctx.usage = usage.get();
    PHX_LOG_INFO(logger, "Sampling GPU utilisation", kv("interval_s", o.utilisation_interval_seconds),
                 kv("idle_threshold_percent", o.idle_threshold_percent), kv("idle_window_s", o.idle_window_seconds));
  }
  for (const auto& r : *resources) {
    PHX_LOG_INFO(logger, "Advertising resource", kv("resource", r.name), kv("devices", r.devices.size()));
  }
  current.Set(StartGeneration(ctx, std::move(config), std::move(resources).value()));
  readiness.Set("");

  // The main thread serves SIGHUP until shutdown starts, then stops everything itself (so
  // a reload in progress and the shutdown never overlap).
  while (!shutdown.shutdown_started()) {
    if (!WaitForHangup(std::chrono::milliseconds(100))) continue;
    if (shutdown.shutdown_started()) break;
    if (o.config_file.empty()) {
      PHX_LOG_WARN(logger, "SIGHUP ignored: no --config file to reload");
      continue;
    }
    PHX_LOG_INFO(logger, "SIGHUP: reloading the config file", kv("file", o.config_file));
    Reload(o, ctx, current, logger.get());
  }
  PHX_LOG_INFO(logger, "Shutting down: stopping kubelet servers and removing sockets");
  if (auto g = current.Take()) g->Stop();
  if (usage) usage->Stop();
  if (pod_watch) pod_watch->Stop();
  if (events) events->Stop();
  http.Shutdown(std::chrono::seconds(2));
  shutdown.Wait();
  PHX_LOG_INFO(logger, "Stopped");
  return kExitOk;
}

}  // namespace phalanx::device_plugin
