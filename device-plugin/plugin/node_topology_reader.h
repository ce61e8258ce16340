// From NVML to the `phalanx.io/gpu-topology` model (core/topology): the published
// annotation, the bandwidth matrix behind GetPreferredAllocation, and `phalanx topology`.
//
// Mapping: GPU pairs with NVLinks become "NV<n>"; otherwise the PCIe common ancestor
// (PIX/PXB/PHB/NODE/SYS; unknown -> SYS, the weakest, so an unread pair never looks
// better than it is). The per-link NVLink rate comes from nvmlDeviceGetNvLinkVersion
// (nvmlNvlinkVersion_t: 1 = 1.0 ... 6 = 4.0, 7 = 5.0) -> 20/25/50 GB/s; RTX products with
// NVLink bridges run 14.0625 GB/s per link. A GPU NVML could not read is marked Unhealthy
// with the reason; its UUID must be known (the model has no place for an unnamed GPU).
#pragma once

#include <string>
#include <string_view>

#include "core/base/result.h"
#include "core/topology/node_topology.h"
#include "device-plugin/nvml/gpu_inventory.h"

namespace phalanx::device_plugin {

// InvalidArgument when the inventory cannot form a valid topology (e.g. a GPU without a
// UUID), naming the GPU.
Result<topology::NodeTopology> TopologyFromInventory(const nvml::GpuInventory& inventory);

// Loads `nvml_library_path` (empty = "libnvidia-ml.so.1"), discovers the GPUs and maps
// them. For `phalanx topology --nvml-library PATH`. Errors are NVML's (driver not
// loaded, library missing) with context.
Result<topology::NodeTopology> ReadNodeTopology(std::string_view nvml_library_path);

// Per-link NVLink rate (GB/s per direction) for an nvmlNvlinkVersion_t value and product.
double NvlinkRateFor(unsigned int nvml_nvlink_version, std::string_view product);

}  // namespace phalanx::device_plugin
