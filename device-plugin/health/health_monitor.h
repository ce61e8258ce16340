// HealthMonitor: the NVML event loop that keeps the HealthTable true (issue 4 §6).
//
// One thread waits on NVML events (XID, ECC) in slices of `wait_slice` and applies
// ClassifyEvent; every `probe_interval` it re-probes each GPU (handle by index + UUID):
// NVML_ERROR_GPU_IS_LOST or a changed UUID -> Unhealthy "GPU is lost"; a device that has
// been Unhealthy for recovery_quiet_seconds without a new event, and whose GPU answers the
// probe, recovers to Healthy (0 = never recover, like NVIDIA's plugin). A failing wait is
// logged and retried: it never marks GPUs unhealthy by itself (a transient driver error
// must not take the whole node down); the probe decides per GPU.
// GPUs the event set could not watch because they are lost start Unhealthy.
// Thread-safety: Start/Stop from one thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include <spdlog/logger.h>

#include "core/base/clock.h"
#include "device-plugin/nvml/gpu_inventory.h"
#include "device-plugin/nvml/nvml_api.h"
#include "device-plugin/nvml/nvml_event_waiter.h"
#include "device-plugin/plugin/config.h"
#include "device-plugin/plugin/health_table.h"
#include "device-plugin/plugin/plugin_metrics.h"

namespace phalanx::device_plugin {

struct HealthMonitorOptions {
  std::chrono::milliseconds wait_slice{100};
  std::chrono::milliseconds probe_interval{1000};
};

class HealthMonitor {
 public:
  HealthMonitor(nvml::NvmlApi& api, nvml::GpuInventory inventory, HealthConfig config, HealthTable& table,
                const PluginMetrics* metrics, std::shared_ptr<spdlog::logger> logger,
                HealthMonitorOptions options = {}, const Clock& clock = RealClock::Instance());
  ~HealthMonitor();

  // Marks GPUs discovery could not read as Unhealthy, creates the event set and starts
  // the thread. An event set that cannot be created is logged (probing still runs).
  void Start();
  void Stop();

  uint64_t events_seen() const { return events_.load(); }
  uint64_t wait_errors() const { return wait_errors_.load(); }

  // One probe pass (the thread calls it every probe_interval); public for tests.
  void ProbeOnce();

 private:
  void Loop();
  void Handle(const nvml::NvmlEvent& event);

  nvml::NvmlApi& api_;
  const nvml::GpuInventory inventory_;
  const HealthConfig config_;
  HealthTable& table_;
  const PluginMetrics* metrics_;
  std::shared_ptr<spdlog::logger> logger_;
  const HealthMonitorOptions options_;
  const Clock& clock_;
  std::unique_ptr<nvml::NvmlEventWaiter> waiter_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> events_{0};
  std::atomic<uint64_t> wait_errors_{0};
  std::thread thread_;
};

}  // namespace phalanx::device_plugin
