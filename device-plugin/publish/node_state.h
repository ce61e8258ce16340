// What the device plugin writes on its Node (docs/architecture.md §2.2), as pure functions:
//   labels      phalanx.io/gpu.product (label-safe: "NVIDIA-H100-80GB-HBM3"), gpu.count,
//               gpu.memory-mib (per GPU, the smallest), mig.capable, nvlink-domain (only
//               when the node belongs to one)
//   annotations phalanx.io/gpu-topology (core/topology codec, with current GPU health)
//               phalanx.io/gpu-state {"version":1,"devices":{"<device ID>":{"health":
//               "Healthy|Unhealthy","reason":"…","xid":N,"podUID":"…"|null,"smUtil5m":42,
//               "memUsedMiB":1024}}} keyed by the IDs advertised to kubelet ("reason"/"xid" only
//               when unhealthy; the utilisation fields only when sampled, see DeviceUsageSummary)
// The patch is a JSON merge patch touching only these keys, so other labels and
// annotations on the Node stay untouched. Thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/base/result.h"
#include "core/topology/node_topology.h"
#include "device-plugin/plugin/device_model.h"
#include "device-plugin/plugin/health_table.h"

namespace phalanx::device_plugin {

inline constexpr std::string_view kGpuStateAnnotation = "phalanx.io/gpu-state";
inline constexpr std::string_view kDevicesAnnotation = "phalanx.io/devices";
inline constexpr std::string_view kIdleSinceAnnotation = "phalanx.io/idle-since";
inline constexpr std::string_view kProductLabel = "phalanx.io/gpu.product";
inline constexpr std::string_view kCountLabel = "phalanx.io/gpu.count";
inline constexpr std::string_view kMemoryLabel = "phalanx.io/gpu.memory-mib";
inline constexpr std::string_view kMigCapableLabel = "phalanx.io/mig.capable";
inline constexpr std::string_view kNvlinkDomainLabel = "phalanx.io/nvlink-domain";

// A valid label value (≤ 63 chars of [A-Za-z0-9._-], alphanumeric at both ends): other
// characters become '-', runs of '-' collapse; "" if nothing is left.
std::string LabelValue(std::string_view text);

std::map<std::string, std::string> NodeLabels(const topology::NodeTopology& topology, bool mig_capable);

// The topology with each GPU's health from `health`.
topology::NodeTopology WithHealth(topology::NodeTopology topology, const HealthTable& health);

// A device's utilisation as phalanx.io/gpu-state carries it (additive fields of version 1):
// smUtil5m = mean SM utilisation over the last 5 minutes in percent, rounded to a whole
// percent; memUsedMiB = memory used. Absent when not measured (MIG devices have no SM
// utilisation in NVML; sampling off).
struct DeviceUsageSummary {
  std::optional<double> sm_util_5m;
  std::optional<uint64_t> memory_used_mib;
  friend bool operator==(const DeviceUsageSummary&, const DeviceUsageSummary&) = default;
};
// Physical device UUID (GPU or MIG) -> summary.
using UsageSummaries = std::map<std::string, DeviceUsageSummary>;

// `allocations`: advertised device ID -> pod UID (devices absent are unallocated). `usage`
// is keyed by the physical device (a time-sliced replica shows its GPU's values).
nlohmann::json GpuStateDocument(const std::vector<ResourceSpec>& resources, const HealthTable& health,
                                const std::map<std::string, std::string>& allocations,
                                const UsageSummaries& usage = {});

// {"metadata":{"labels":{...},"annotations":{topology, state}}}; empty parts are left out
// (the publisher sends only what changed).
nlohmann::json NodePatch(const std::map<std::string, std::string>& labels, const std::string& topology_doc,
                         const std::string& state_doc);

}  // namespace phalanx::device_plugin
