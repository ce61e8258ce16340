// DiscoverGpus: one pass over NVML producing a GpuInventory (GPUs, MIG devices, the
// pairwise NVLink/PCIe relation of every GPU pair).
//
// Failure policy: a machine-wide failure (no device count, NVML not initialised) fails
// the call; a per-GPU failure (GPU lost, a query the driver refuses) is recorded in that
// GPU's `status` and discovery continues, so one dead GPU never hides the healthy ones.
// Queries a driver may lack (nvmlDeviceGetNumaNodeId, NVLink remote device type, MIG on
// non-MIG GPUs) degrade to fallbacks, never to errors.
//
// NUMA node: nvmlDeviceGetNumaNodeId where the driver has it, else
// <sysfs_pci_devices>/<dddd:bb:dd.f>/numa_node (-1 or missing file = no NUMA affinity).
// Caveat: on platforms where GPU memory is itself a NUMA node (Grace Hopper), NVML reports
// that node rather than the CPU node closest to the GPU.
//
// Requires an open NvmlSession on `api`. Not thread-safe with respect to concurrent MIG
// reconfiguration (the result is a snapshot).
#pragma once

#include <string>

#include "core/base/result.h"
#include "device-plugin/nvml/gpu_inventory.h"
#include "device-plugin/nvml/nvml_api.h"

namespace phalanx::nvml {

struct DiscoveryOptions {
  // Where PCI devices appear in sysfs, for the NUMA fallback. Tests point it at a
  // temporary directory.
  std::string sysfs_pci_devices = "/sys/bus/pci/devices";
};

// Errors: the NvmlStatus of nvmlDeviceGetCount (e.g. kFailedPrecondition
// "... (NVML_ERROR_UNINITIALIZED)" without a session).
Result<GpuInventory> DiscoverGpus(NvmlApi& api, const DiscoveryOptions& options = {});

}  // namespace phalanx::nvml
