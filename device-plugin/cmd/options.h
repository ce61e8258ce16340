// Command-line options of phalanx-device-plugin (CLI11) and their validation.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "core/base/result.h"
#include "core/log/log_options.h"

namespace phalanx::device_plugin {

struct Options {
  // Kubelet's root directory: the pod-resources socket is in <kubelet-dir>/pod-resources.
  std::string kubelet_dir = "/var/lib/kubelet";
  // kubelet.sock and our sockets; empty = <kubelet-dir>/device-plugins. Kubelet 1.26 keeps the
  // registration directory at /var/lib/kubelet/device-plugins even with another --root-dir.
  std::string device_plugin_dir;
  std::string pod_resources_socket;   // empty = <kubelet-dir>/pod-resources/kubelet.sock
  std::string nvml_library = "libnvidia-ml.so.1";
  std::string config_file;            // empty = defaults
  std::string node_name;              // default: env NODE_NAME
  std::string kubeconfig;             // empty = in-cluster, else no publishing
  std::string metrics_addr = ":8080";
  std::string lock_file;              // empty = <kubelet-dir>/phalanx-device-plugin.lock
  double publish_interval_seconds = 0;  // 0 = from config (default 1)
  std::string mig_strategy;           // overrides flags.migStrategy when set
  std::optional<bool> fail_on_init_error;  // overrides flags.failOnInitError when set
  int kubelet_poll_ms = 200;
  bool publish = true;                // false: never talk to the API server
  // Utilisation sampling and idle detection (docs/device-plugin.md "Utilisation").
  double utilisation_interval_seconds = 10;  // 0 = off
  double idle_threshold_percent = 5;
  double idle_window_seconds = 1800;
  log::LogOptions log;
};

void AddFlags(CLI::App& app, Options& options);

// The utilisation flags' bounds; InvalidArgument naming the flag otherwise.
Status ValidateUsageFlags(const Options& options);

// Paths derived from --kubelet-dir unless given explicitly.
std::string DevicePluginDir(const Options& options);     // --device-plugin-dir or <kubelet-dir>/device-plugins
std::string PodResourcesSocket(const Options& options);  // --pod-resources-socket or the default
std::string LockFilePath(const Options& options);        // --lock-file or the default

struct ListenAddress {
  std::string host;
  uint16_t port = 0;
};
// ":8080" -> {"0.0.0.0", 8080}; "127.0.0.1:0" -> {"127.0.0.1", 0}. InvalidArgument otherwise.
Result<ListenAddress> ParseListenAddress(const std::string& addr);

}  // namespace phalanx::device_plugin
