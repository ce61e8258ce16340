// Test helpers: resources and inventories built in code.
#pragma once

#include <string>

#include "core/topology/node_topology.h"
#include "device-plugin/nvml/gpu_inventory.h"
#include "device-plugin/plugin/device_model.h"

namespace phalanx::device_plugin::testing {

// nvidia.com/gpu with one whole-GPU device per GPU of `t` (ID = UUID).
inline ResourceSpec WholeGpuResource(const topology::NodeTopology& t) {
  ResourceSpec r{.name = "nvidia.com/gpu"};
  for (const auto& g : t.gpus) {
    r.devices.push_back(AdvertisedDevice{.id = g.uuid.str(), .physical = g.uuid, .parent_gpu = g.uuid,
                                         .gpu_position = g.index, .numa_node = g.numa_node});
  }
  return r;
}

inline nvml::GpuInfo Gpu(unsigned index, bool mig_enabled = false) {
  nvml::GpuInfo g;
  g.index = index;
  g.uuid = GpuUuid("GPU-" + std::to_string(index));
  g.name = "NVIDIA A100-SXM4-80GB";
  g.memory_mib = 81920;
  g.numa_node = static_cast<int>(index / 4);
  g.mig_capable = true;
  g.mig_enabled = mig_enabled;
  return g;
}

inline nvml::MigDeviceInfo Mig(const std::string& uuid, const std::string& profile) {
  nvml::MigDeviceInfo m;
  m.uuid = GpuUuid(uuid);
  m.profile = profile;
  return m;
}

}  // namespace phalanx::device_plugin::testing
