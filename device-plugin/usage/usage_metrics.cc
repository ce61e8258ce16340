#include "device-plugin/usage/usage_metrics.h"

#include <functional>
#include <optional>
#include <vector>

#include "core/metrics/buckets.h"
#include "core/metrics/exposition.h"

namespace phalanx::device_plugin {
namespace {

const std::vector<std::string> kLabels = {"node", "gpu", "pod", "namespace", "container", "job", "gang", "tier"};

struct Family {
  const char* name;
  const char* help;
  bool held_only;  // only for devices a pod holds
  std::function<std::optional<double>(const DeviceUsage&, const Holder*)> value;
};

const std::vector<Family>& Families() {
  static const std::vector<Family> families = {
      {"phalanx_gpu_sm_utilisation", "Percent of the last NVML sample period in which a kernel ran on the device.",
       false, [](const DeviceUsage& d, const Holder*) { return d.sample.sm_util; }},
      {"phalanx_gpu_sm_utilisation_5m", "Mean of phalanx_gpu_sm_utilisation over the last 5 minutes.", false,
       [](const DeviceUsage& d, const Holder*) { return d.sm_util_5m; }},
      {"phalanx_gpu_memory_utilisation", "Percent of the last NVML sample period in which device memory was read or written.",
       false, [](const DeviceUsage& d, const Holder*) { return d.sample.mem_util; }},
      {"phalanx_gpu_memory_used_bytes", "Device memory in use.", false,
       [](const DeviceUsage& d, const Holder*) -> std::optional<double> {
         if (!d.sample.memory_used_bytes) return std::nullopt;
         return static_cast<double>(*d.sample.memory_used_bytes);
       }},
      {"phalanx_gpu_memory_total_bytes", "Device memory.", false,
       [](const DeviceUsage& d, const Holder*) -> std::optional<double> {
         if (!d.sample.memory_total_bytes) return std::nullopt;
         return static_cast<double>(*d.sample.memory_total_bytes);
       }},
      {"phalanx_gpu_power_watts", "Board power draw (whole GPUs only).", false,
       [](const DeviceUsage& d, const Holder*) { return d.sample.power_watts; }},
      {"phalanx_gpu_sm_clock_mhz", "Current SM clock (whole GPUs only).", false,
       [](const DeviceUsage& d, const Holder*) { return d.sample.sm_clock_mhz; }},
      {"phalanx_gpu_sm_clock_max_mhz", "Maximum SM clock (whole GPUs only).", false,
       [](const DeviceUsage& d, const Holder*) { return d.sample.sm_clock_max_mhz; }},
      {"phalanx_gpu_sm_active", "GPM: percent of SMs busy between the last two samples (Hopper and newer, MIG instances too).",
       false, [](const DeviceUsage& d, const Holder*) { return d.sample.sm_active; }},
      {"phalanx_gpu_sm_occupancy", "GPM: percent of resident warps against the theoretical maximum.", false,
       [](const DeviceUsage& d, const Holder*) { return d.sample.sm_occupancy; }},
      {"phalanx_gpu_idle", "1 while the pod holding the device has been below the idle threshold for the idle window.",
       true, [](const DeviceUsage&, const Holder* h) -> std::optional<double> { return h->idle ? 1.0 : 0.0; }},
  };
  return families;
}

}  // namespace

Result<UsageCounters> UsageCounters::Register(metrics::Registry& r) {
  UsageCounters c;
  PHX_ASSIGN_OR_RETURN(auto samples, r.AddCounter("phalanx_device_plugin_utilisation_samples_total",
                                                  "Utilisation sampling passes over every device."));
  PHX_ASSIGN_OR_RETURN(c.samples, samples->WithLabels({}));
  PHX_ASSIGN_OR_RETURN(c.errors, r.AddCounter("phalanx_device_plugin_utilisation_errors_total",
                                              "NVML errors while sampling (not unsupported queries), by query.",
                                              {"query"}));
  PHX_ASSIGN_OR_RETURN(auto buckets, metrics::ExponentialBuckets(1e-5, 4, 10));
  PHX_ASSIGN_OR_RETURN(auto seconds, r.AddHistogram("phalanx_device_plugin_utilisation_sample_seconds",
                                                    "Time of one sampling pass (NVML, pod-resources, idle check).",
                                                    {}, buckets));
  PHX_ASSIGN_OR_RETURN(c.sample_seconds, seconds->WithLabels({}));
  PHX_ASSIGN_OR_RETURN(c.idle_patches, r.AddCounter("phalanx_device_plugin_idle_patches_total",
                                                    "phalanx.io/idle-since pod patches, by result.", {"result"}));
  return c;
}

void AppendUsageMetrics(std::string& out, const std::string& node, const UsageSnapshot& snapshot) {
  for (const Family& f : Families()) {
    bool header = false;
    auto emit = [&](const DeviceUsage& d, const Holder* h) {
      auto v = f.value(d, h);
      if (!v) return;
      if (!header) {
        metrics::AppendHeader(out, f.name, f.help, "gauge");
        header = true;
      }
      const std::vector<std::string> values =
          h ? std::vector<std::string>{node, d.sample.uuid, h->name, h->ns, h->container, h->job, h->gang, h->tier}
            : std::vector<std::string>{node, d.sample.uuid, "", "", "", "", "", ""};
      metrics::AppendSeries(out, f.name, "", kLabels, values);
      metrics::AppendValue(out, *v);
      out += '\n';
    };
    for (const DeviceUsage& d : snapshot.devices) {
      if (d.holders.empty()) {
        if (!f.held_only) emit(d, nullptr);
        continue;
      }
      for (const Holder& h : d.holders) emit(d, &h);
    }
  }
}

}  // namespace phalanx::device_plugin
