#include "device-plugin/cmd/daemon.h"

#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>

#include <fmt/format.h>

#include "core/http/http_server.h"
#include "core/log/log.h"
#include "core/log/logger_factory.h"
#include "core/metrics/registry.h"
#include "core/placement/topology_bandwidth.h"
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
#include "device-plugin/publish/publisher.h"

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

}  // namespace

int RunDaemon(const Options& o, ShutdownSignal& shutdown) {
  auto config_or = EffectiveConfig(o);
  if (!config_or.ok()) {
    Fatal(fmt::format("invalid configuration: {}", config_or.status().message()));
    return kExitBadConfig;
  }
  const Config config = std::move(config_or).value();
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

  const std::string lock_path = o.lock_file.empty() ? o.kubelet_dir + "/phalanx-device-plugin.lock" : o.lock_file;
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

  Readiness readiness;
  std::unique_ptr<PluginManager> manager;
  std::unique_ptr<Publisher> publisher;
  std::string publish_disabled;  // why publishing cannot run at all (degraded), or ""
  http::HttpServer http(http::ServerOptions{.address = listen->host, .port = listen->port, .io_threads = 1});
  http::AddStandardEndpoints(http, http::StandardEndpoints{
      .ready = [&](std::string* reason) {
        std::string r = readiness.Get();
        if (r.empty() && manager && !manager->AllRegistered()) r = "not registered with kubelet";
        if (r.empty()) r = publish_disabled;
        if (r.empty() && publisher) r = publisher->DegradedReason();
        if (!r.empty() && reason) *reason = r;
        return r.empty();
      },
      .metrics = [&] { return registry.Expose(); }});
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
  auto topo = TopologyFromInventory(inventory);
  auto bandwidth = std::make_shared<placement::BandwidthMatrix>(static_cast<int>(inventory.gpus.size()));
  if (topo.ok()) {
    *bandwidth = placement::BandwidthFromTopology(*topo);
  } else {
    PHX_LOG_WARN(logger, "Failed to build the GPU topology; preferring devices without it", kv("err", topo.status()));
  }

  HealthTable health;
  HealthMonitor monitor(*nvml, inventory, config.health, health, pm.get(), log::MakeLogger("device_plugin.health"));
  monitor.Start();

  // Publishing: without API access the node keeps serving kubelet; /readyz says why.
  std::unique_ptr<NodeApi> node_api;
  std::unique_ptr<PodResourcesClient> pod_resources;
  if (o.publish) {
    if (o.node_name.empty()) {
      publish_disabled = "publishing degraded: no --node-name (or env NODE_NAME)";
    } else if (auto api = KubeNodeApi::Create(o.kubeconfig); !api.ok()) {
      publish_disabled = "publishing degraded: " + api.status().message();
    } else {
      node_api = std::move(api).value();
      pod_resources = std::make_unique<PodResourcesClient>(o.pod_resources_socket);
      bool mig_capable = false;
      for (const auto& g : inventory.gpus) mig_capable = mig_capable || g.mig_capable;
      publisher = std::make_unique<Publisher>(
          PublisherOptions{.node_name = o.node_name,
                           .interval = std::chrono::milliseconds(static_cast<int64_t>(config.publish_interval_seconds * 1000))},
          *node_api, pod_resources.get(), topo.ok() ? std::optional(*topo) : std::nullopt, mig_capable, *resources,
          health, pm.get(), log::MakeLogger("device_plugin.publish"));
    }
    if (!publish_disabled.empty()) PHX_LOG_WARN(logger, "Not publishing node GPU state", kv("reason", publish_disabled));
  }

  ServerDeps deps{.config = &config, .health = &health, .bandwidth = bandwidth,
                  .pods = publisher.get(), .metrics = pm.get(),
                  .logger = log::MakeLogger("device_plugin.kubelet")};
  manager = std::make_unique<PluginManager>(
      ManagerOptions{.plugin_dir = o.kubelet_dir, .poll_interval = std::chrono::milliseconds(o.kubelet_poll_ms)},
      *resources, deps);
  for (const auto& r : *resources) {
    PHX_LOG_INFO(logger, "Advertising resource", kv("resource", r.name), kv("devices", r.devices.size()));
  }
  manager->Start();
  if (publisher) publisher->Start();
  readiness.Set("");

  shutdown.OnShutdown([&] {
    PHX_LOG_INFO(logger, "Shutting down: stopping kubelet servers and removing sockets");
    manager->Stop();
    if (publisher) publisher->Stop();
    monitor.Stop();
    http.Shutdown(std::chrono::seconds(2));
  });
  shutdown.Wait();
  PHX_LOG_INFO(logger, "Stopped");
  return kExitOk;
}

}  // namespace phalanx::device_plugin
