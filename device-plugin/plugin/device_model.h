// The resources a node advertises to kubelet and their devices (docs/architecture.md §2.3), derived
// from the NVML inventory and the config:
//   migStrategy none   nvidia.com/gpu = every GPU (MIG mode ignored, as NVIDIA does)
//   migStrategy single nvidia.com/gpu = every MIG device; all GPUs must be MIG-enabled
//                      with one profile (else an error naming the offending GPU)
//   migStrategy mixed  nvidia.com/gpu = GPUs without MIG; nvidia.com/mig-<profile> per
//                      profile ('+' becomes '.', "1g.10gb+me" -> mig-1g.10gb.me)
// then time-slicing: a resource with replicas N advertises "<uuid>::<n>", n = 0..N-1,
// under its (re)name. Resources without devices are not advertised. A GPU NVML could not
// read completely is still advertised (kubelet must see it go Unhealthy), never dropped.
// Pure; thread-compatible value types.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/base/ids.h"
#include "core/base/result.h"
#include "device-plugin/nvml/gpu_inventory.h"
#include "device-plugin/plugin/config.h"

namespace phalanx::device_plugin {

struct AdvertisedDevice {
  std::string id;         // the device ID kubelet sees (UUID, or "<uuid>::<n>")
  GpuUuid physical;       // the GPU or MIG UUID the container gets
  GpuUuid parent_gpu;     // the physical GPU (== physical for whole GPUs)
  int gpu_position = 0;   // position of the parent GPU in the inventory (= topology index)
  std::optional<int> numa_node;
  bool mig = false;
  int replica = -1;       // >= 0 for time-sliced replicas
};

struct ResourceSpec {
  std::string name;                    // "nvidia.com/gpu"
  std::vector<AdvertisedDevice> devices;
  int replicas = 1;                    // > 1 when time-sliced
  bool mig = false;                    // devices are MIG devices

  // nullptr when `id` is not one of this resource's devices.
  const AdvertisedDevice* Find(const std::string& id) const;
};

// Errors: InvalidArgument for a layout the MIG strategy cannot express, or a time-slicing
// entry that names no advertised resource.
Result<std::vector<ResourceSpec>> BuildResources(const nvml::GpuInventory& inventory,
                                                 const Config& config);

// "nvidia.com/mig-1g.10gb" for profile "1g.10gb" ("+" -> ".").
std::string MigResourceName(const std::string& profile);

// The socket file name a resource is served on: "phalanx-nvidia.com-gpu.sock".
std::string SocketNameFor(const std::string& resource_name);

// Time-sliced replica ID "<uuid>::<n>" -> "<uuid>"; other IDs unchanged.
std::string StripReplica(const std::string& id);

}  // namespace phalanx::device_plugin
