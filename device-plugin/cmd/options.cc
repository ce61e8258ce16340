#include "device-plugin/cmd/options.h"

#include <cstdlib>

#include <fmt/format.h>

namespace phalanx::device_plugin {

void AddFlags(CLI::App& app, Options& o) {
  if (const char* n = std::getenv("NODE_NAME")) o.node_name = n;
  app.add_option("--kubelet-dir", o.kubelet_dir,
                 "Kubelet's root directory: pod-resources in <kubelet-dir>/pod-resources (and the default "
                 "--device-plugin-dir, <kubelet-dir>/device-plugins)")
      ->capture_default_str();
  app.add_option("--device-plugin-dir", o.device_plugin_dir,
                 "Where kubelet.sock and our sockets are (default <kubelet-dir>/device-plugins; kubelet "
                 "1.26 keeps it at /var/lib/kubelet/device-plugins whatever its --root-dir)");
  app.add_option("--pod-resources-socket", o.pod_resources_socket, "Kubelet's pod-resources socket (default <kubelet-dir>/pod-resources/kubelet.sock)");
  app.add_option("--nvml-library", o.nvml_library, "NVML library to dlopen")->capture_default_str();
  app.add_option("--config", o.config_file, "Config file (version: v1, NVIDIA device plugin format)");
  app.add_option("--node-name", o.node_name, "This node's name (default: env NODE_NAME)");
  app.add_option("--kubeconfig", o.kubeconfig,
                 "Kubeconfig for publishing node labels/annotations (default: in-cluster)");
  app.add_option("--metrics-addr", o.metrics_addr, "Address of /metrics, /healthz, /readyz")
      ->capture_default_str();
  app.add_option("--lock-file", o.lock_file,
                 "Single-instance lock, outside the directory kubelet cleans on start (default "
                 "<kubelet-dir>/phalanx-device-plugin.lock)");
  app.add_option("--publish-interval", o.publish_interval_seconds,
                 "Seconds between node state writes (>= 1; default from config, 1)");
  app.add_option("--mig-strategy", o.mig_strategy, "none|single|mixed (overrides the config file)")
      ->check(CLI::IsMember({"none", "single", "mixed"}));
  app.add_option("--fail-on-init-error", o.fail_on_init_error,
                 "Exit when NVML cannot be initialised (false: stay up, advertise nothing)");
  app.add_option("--kubelet-poll-ms", o.kubelet_poll_ms, "How often to check for kubelet restarts")
      ->capture_default_str()
      ->check(CLI::Range(10, 10000));
  app.add_option("--publish", o.publish,
                 "Publish node labels and GPU topology/state annotations (false: kubelet only)")
      ->capture_default_str();
  app.add_option("--utilisation-interval", o.utilisation_interval_seconds,
                 "Seconds between GPU utilisation samples (0 = no sampling, no idle detection)")
      ->capture_default_str();
  app.add_option("--idle-threshold-percent", o.idle_threshold_percent,
                 "SM utilisation below which a pod's GPUs count as idle")
      ->capture_default_str();
  app.add_option("--idle-window", o.idle_window_seconds,
                 "Seconds a pod's GPUs must stay below the threshold to be flagged idle")
      ->capture_default_str();
  log::AddLogFlags(app, o.log);
}

Status ValidateUsageFlags(const Options& o) {
  const double interval = o.utilisation_interval_seconds;
  if (!(interval == 0 || (interval >= 0.1 && interval <= 3600))) {
    return InvalidArgumentError(fmt::format(
        "--utilisation-interval: must be 0 (off) or between 0.1 and 3600 seconds, got {}", interval));
  }
  if (!(o.idle_threshold_percent > 0 && o.idle_threshold_percent <= 100)) {
    return InvalidArgumentError(
        fmt::format("--idle-threshold-percent: must be above 0 and at most 100, got {}", o.idle_threshold_percent));
  }
  if (!(o.idle_window_seconds > 0 && o.idle_window_seconds >= interval && o.idle_window_seconds <= 7 * 86400)) {
    return InvalidArgumentError(fmt::format(
        "--idle-window: must be at least --utilisation-interval ({} s) and at most 7 days, got {} s", interval,
        o.idle_window_seconds));
  }
  return OkStatus();
}

std::string DevicePluginDir(const Options& o) {
  return o.device_plugin_dir.empty() ? o.kubelet_dir + "/device-plugins" : o.device_plugin_dir;
}

std::string PodResourcesSocket(const Options& o) {
  return o.pod_resources_socket.empty() ? o.kubelet_dir + "/pod-resources/kubelet.sock" : o.pod_resources_socket;
}

std::string LockFilePath(const Options& o) {
  // Not in the device-plugins directory: kubelet deletes every file there when it starts, and
  // a deleted lock file lets a second instance lock a new one.
  return o.lock_file.empty() ? o.kubelet_dir + "/phalanx-device-plugin.lock" : o.lock_file;
}

Result<ListenAddress> ParseListenAddress(const std::string& addr) {
  auto colon = addr.rfind(':');
  if (colon == std::string::npos) {
    return InvalidArgumentError(fmt::format("--metrics-addr: expected [host]:port, got \"{}\"", addr));
  }
  ListenAddress out;
  out.host = colon == 0 ? "0.0.0.0" : addr.substr(0, colon);
  const std::string port = addr.substr(colon + 1);
  char* end = nullptr;
  long p = std::strtol(port.c_str(), &end, 10);
  if (port.empty() || *end != '\0' || p < 0 || p > 65535) {
    return InvalidArgumentError(fmt::format("--metrics-addr: bad port in \"{}\"", addr));
  }
  out.port = static_cast<uint16_t>(p);
  return out;
}

}  // namespace phalanx::device_plugin
