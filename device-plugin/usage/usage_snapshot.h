// What the utilisation monitor measured in its last pass: per physical device the NVML
// reading and its 5-minute mean, with the pods holding it (pod-resources) and their labels.
// Read by /metrics (usage_metrics.h) and the node annotation (UsageSummaries). Value types.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/base/clock.h"
#include "device-plugin/nvml/device_sampler.h"
#include "device-plugin/publish/node_state.h"

namespace phalanx::device_plugin {

struct Holder {
  std::string ns, name, uid, container;
  std::string job, gang, tier;  // labels phalanx.io/job-name, phalanx.io/gang; priorityClassName
  bool idle = false;
  std::optional<SystemTime> idle_since;
};

struct DeviceUsage {
  nvml::DeviceSample sample;
  std::optional<double> sm_util_5m;
  std::vector<Holder> holders;  // several with time-slicing; empty when free
};

struct UsageSnapshot {
  SystemTime taken{};
  std::vector<DeviceUsage> devices;  // inventory order
};

// The node annotation's view (rounded: whole percent, whole MiB), so a write happens only
// when a rounded value moved.
UsageSummaries Summarise(const UsageSnapshot& snapshot);

// "2026-11-26T14:05:00Z"; and back (nullopt when malformed).
std::string FormatRfc3339(SystemTime t);
std::optional<SystemTime> ParseRfc3339(const std::string& text);

}  // namespace phalanx::device_plugin
