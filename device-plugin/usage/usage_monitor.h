// UsageMonitor: the device plugin's utilisation sampling thread (issue 18 §1-3,
// docs/device-plugin.md "Utilisation").
//
// Every `interval` one pass: DeviceSampler reads every GPU and MIG device (NVML, no lock of
// ours held, so ListAndWatch/Allocate/GetPreferredAllocation never wait for it); pod-resources
// says which pod and container holds each device, the PodCache adds the pod's UID, job, gang and
// tier; the 5-minute mean and the IdleTracker are updated; then the pod annotation
// phalanx.io/idle-since is reconciled (merge patch, set while idle, null once active again)
// with an Event GpuIdle / GpuActive on each transition. The pass ends by swapping in the new
// snapshot (metrics, node annotation summary).
// NVML errors never touch device health and never stop the loop; an unsupported query is
// logged once per device, a failing one once per change of its error. Without pod-resources
// or the pod list the devices are still sampled, only not attributed (no idle detection).
// Thread-safe; Start() once, Stop() (or the destructor) joins.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <spdlog/logger.h>

#include "core/base/clock.h"
#include "device-plugin/nvml/device_sampler.h"
#include "device-plugin/nvml/gpu_inventory.h"
#include "device-plugin/nvml/nvml_api.h"
#include "device-plugin/publish/node_api.h"
#include "device-plugin/publish/node_events.h"
#include "device-plugin/publish/pod_cache.h"
#include "device-plugin/publish/pod_resources_client.h"
#include "device-plugin/usage/idle_tracker.h"
#include "device-plugin/usage/usage_history.h"
#include "device-plugin/usage/usage_metrics.h"
#include "device-plugin/usage/usage_snapshot.h"

namespace phalanx::device_plugin {

struct UsageMonitorOptions {
  std::string node_name;
  std::chrono::milliseconds interval{10'000};
  IdleOptions idle;
  std::chrono::milliseconds summary_window = std::chrono::minutes(5);
};

// Where the monitor finds pods and writes what it concludes; each may be null.
struct UsageMonitorDeps {
  PodResourcesClient* pod_resources = nullptr;  // null: no attribution
  const PodCache* pods = nullptr;               // null: holders without UID/labels, no idle detection
  NodeApi* api = nullptr;                       // null: no idle-since annotation
  NodeEvents* events = nullptr;                 // null: no Events
  const UsageCounters* counters = nullptr;
};

class UsageMonitor {
 public:
  UsageMonitor(UsageMonitorOptions options, nvml::NvmlApi& api, const nvml::GpuInventory& inventory,
               UsageMonitorDeps deps, std::shared_ptr<spdlog::logger> logger,
               const Clock& clock = RealClock::Instance());
  ~UsageMonitor();

  void Start();  // the first pass runs at once
  void Stop();   // joins the thread and frees NVML resources (GPM samples): call before NVML goes

  // One pass (the thread's work; tests call it directly instead of Start()).
  void SampleOnce();

  std::shared_ptr<const UsageSnapshot> Snapshot() const;
  std::shared_ptr<const UsageSummaries> Summaries() const;
  uint64_t passes() const { return passes_.load(); }

 private:
  struct PodInfo;
  void Loop();
  void LogNotices(const std::vector<nvml::SampleNotice>& notices);
  void Reconcile(const PodOnNode& pod, const IdleDecision& decision, const std::vector<std::string>& devices);

  const UsageMonitorOptions options_;
  const UsageMonitorDeps deps_;
  std::shared_ptr<spdlog::logger> logger_;
  const Clock& clock_;
  nvml::DeviceSampler sampler_;   // sampling thread only
  UsageHistory history_;          // sampling thread only
  IdleTracker tracker_;           // sampling thread only
  std::string attribution_error_; // sampling thread only: last pod-resources error, for logging once
  bool patch_refused_logged_ = false;  // sampling thread only: a 403 on a pod patch was logged

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;                                  // guarded by mu_
  std::shared_ptr<const UsageSnapshot> snapshot_;      // guarded by mu_
  std::shared_ptr<const UsageSummaries> summaries_;    // guarded by mu_
  std::atomic<uint64_t> passes_{0};
  std::thread thread_;
};

}  // namespace phalanx::device_plugin
