// EncodeTopology: writes the version-1 annotation by hand rather than through a JSON DOM,
// so that key order (version first, as a human reads it) and number formatting are fixed
// by this file alone and the output is byte-for-byte deterministic.
#include <fmt/format.h>

#include "core/topology/topology_codec.h"
#include "core/topology/topology_validation.h"

namespace phalanx::topology {
namespace {

// Strings reaching here passed ValidateTopology (valid UTF-8, no control characters), so
// only quote and backslash need escaping; control characters are still escaped so the
// output stays valid JSON whatever happens upstream.
void AppendString(std::string& out, std::string_view s) {
  out.push_back('"');
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (static_cast<unsigned char>(c) < 0x20) {
      fmt::format_to(std::back_inserter(out), "\\u{:04x}", static_cast<int>(c));
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
}

void AppendKey(std::string& out, std::string_view key) {
  out.push_back('"');
  out.append(key);
  out.append("\":");
}

void AppendStringField(std::string& out, std::string_view key, std::string_view value) {
  AppendKey(out, key);
  AppendString(out, value);
  out.push_back(',');
}

template <typename T>
void AppendNumberField(std::string& out, std::string_view key, T value) {
  AppendKey(out, key);
  // fmt prints doubles in the shortest form that parses back to the same value, so
  // nvlinkGBpsPerLink survives the round trip exactly.
  fmt::format_to(std::back_inserter(out), "{},", value);
}

void AppendMig(std::string& out, const MigDevice& mig) {
  out.push_back('{');
  AppendStringField(out, "uuid", mig.uuid.str());
  AppendStringField(out, "profile", mig.profile);
  AppendNumberField(out, "memoryMiB", mig.memory_mib);
  AppendNumberField(out, "gpuInstanceId", mig.gpu_instance_id);
  AppendNumberField(out, "computeInstanceId", mig.compute_instance_id);
  fmt::format_to(std::back_inserter(out), "\"placement\":{{\"start\":{},\"size\":{}}}}}", mig.placement_start,
                 mig.placement_size);
}

void AppendGpu(std::string& out, const Gpu& gpu) {
  out.push_back('{');
  AppendNumberField(out, "index", gpu.index);
  AppendStringField(out, "uuid", gpu.uuid.str());
  AppendStringField(out, "product", gpu.product);
  AppendNumberField(out, "memoryMiB", gpu.memory_mib);
  if (gpu.numa_node) AppendNumberField(out, "numaNode", *gpu.numa_node);
  if (!gpu.pci_bus_id.empty()) AppendStringField(out, "pciBusId", gpu.pci_bus_id);
  AppendStringField(out, "health", gpu.health == Health::kHealthy ? "Healthy" : "Unhealthy");
  if (!gpu.health_reason.empty()) AppendStringField(out, "healthReason", gpu.health_reason);
  if (gpu.nvlink_gbps_per_link > 0) AppendNumberField(out, "nvlinkGBpsPerLink", gpu.nvlink_gbps_per_link);
  AppendKey(out, "migEnabled");
  out.append(gpu.mig_enabled ? "true" : "false");
  if (!gpu.mig_devices.empty()) {
    out.append(",\"migDevices\":[");
    for (size_t k = 0; k < gpu.mig_devices.size(); ++k) {
      if (k > 0) out.push_back(',');
      AppendMig(out, gpu.mig_devices[k]);
    }
    out.push_back(']');
  }
  out.push_back('}');
}

}  // namespace

Result<std::string> EncodeTopology(const NodeTopology& topology) {
  PHX_RETURN_IF_ERROR(ValidateTopology(topology));
  std::string out;
  // ~250 bytes per GPU and 6 per matrix cell cover typical nodes without regrowth.
  out.reserve(128 + topology.gpus.size() * 256 + topology.MigDeviceCount() * 200 +
              static_cast<size_t>(topology.links.size()) * topology.links.size() * 7);
  out.push_back('{');
  AppendNumberField(out, "version", kTopologyVersion);
  if (!topology.driver_version.empty()) AppendStringField(out, "driverVersion", topology.driver_version);
  if (!topology.cuda_version.empty()) AppendStringField(out, "cudaVersion", topology.cuda_version);
  if (!topology.nvlink_domain.empty()) AppendStringField(out, "nvlinkDomain", topology.nvlink_domain);
  out.append("\"gpus\":[");
  for (size_t i = 0; i < topology.gpus.size(); ++i) {
    if (i > 0) out.push_back(',');
    AppendGpu(out, topology.gpus[i]);
  }
  out.append("],\"links\":[");
  const int n = topology.links.size();
  for (int i = 0; i < n; ++i) {
    if (i > 0) out.push_back(',');
    out.push_back('[');
    for (int j = 0; j < n; ++j) {
      if (j > 0) out.push_back(',');
      AppendString(out, topology.links.at(i, j).Token());
    }
    out.push_back(']');
  }
  out.append("]}");
  return out;
}

}  // namespace phalanx::topology
