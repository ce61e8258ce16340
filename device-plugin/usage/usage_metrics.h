// The utilisation metrics of the device plugin (docs/device-plugin.md, "Utilisation").
//
// Per device and holder, rendered at scrape time from the monitor's latest snapshot, so a
// series disappears as soon as its pod no longer holds the device (core/metrics families never
// drop children). Labels {node, gpu, pod, namespace, container, job, gang, tier}: `gpu` is the
// physical device UUID (GPU-… or MIG-…); the pod labels are empty for a device no pod holds.
// Cardinality is bounded by devices × their holders on this node.
//   phalanx_gpu_sm_utilisation          % of time a kernel ran (NVML), last sample
//   phalanx_gpu_sm_utilisation_5m       its mean over 5 minutes
//   phalanx_gpu_memory_utilisation      memory-controller busy %
//   phalanx_gpu_memory_used_bytes, phalanx_gpu_memory_total_bytes
//   phalanx_gpu_power_watts             board power (GPUs only)
//   phalanx_gpu_sm_clock_mhz, phalanx_gpu_sm_clock_max_mhz (GPUs only)
//   phalanx_gpu_sm_active, phalanx_gpu_sm_occupancy  GPM (Hopper+; MIG instances too)
//   phalanx_gpu_idle                    1 while the holder is idle (held devices only)
// A value NVML did not give is left out (no series), never reported as 0.
// Counters in the registry: phalanx_device_plugin_utilisation_samples_total,
// …_utilisation_errors_total{query}, …_utilisation_sample_seconds, …_idle_patches_total{result}.
// Thread-safe.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "core/base/result.h"
#include "core/metrics/registry.h"
#include "device-plugin/usage/usage_snapshot.h"

namespace phalanx::device_plugin {

struct UsageCounters {
  metrics::Counter* samples = nullptr;
  metrics::CounterFamily* errors = nullptr;          // {query}
  metrics::Histogram* sample_seconds = nullptr;
  metrics::CounterFamily* idle_patches = nullptr;    // {result: ok|error}

  static Result<UsageCounters> Register(metrics::Registry& registry);
};

// Appends the per-device families for `snapshot` in text format 0.0.4.
void AppendUsageMetrics(std::string& out, const std::string& node, const UsageSnapshot& snapshot);

}  // namespace phalanx::device_plugin
