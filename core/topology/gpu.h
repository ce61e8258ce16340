// Gpu and MigDevice: one physical GPU of a node and the MIG devices carved out of it, as
// published in the `phalanx.io/gpu-topology` annotation (docs/contracts/gpu-topology.md).
//
// Plain value types with public fields; the contract's invariants (UUID formats, ranges,
// non-overlapping MIG placements, ...) are checked by ValidateTopology
// (topology_validation.h), which the codec runs on every encode and decode.
// Thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/base/ids.h"

namespace phalanx::topology {

enum class Health : uint8_t { kHealthy, kUnhealthy };

// A MIG device (NVML: a compute instance inside a GPU instance). Several compute
// instances of one GPU instance share its placement and memory.
struct MigDevice {
  // Device ID advertised to kubelet: "MIG-<uuid>" (NVML returns GPU and MIG UUIDs alike).
  GpuUuid uuid;
  // "1g.10gb", "3g.40gb", "1c.3g.40gb", "1g.10gb+me": nvidia-smi's profile name.
  std::string profile;
  uint64_t memory_mib = 0;
  int gpu_instance_id = 0;
  int compute_instance_id = 0;
  // Placement of the GPU instance, in memory slices of the parent GPU (8 on A100/H100):
  // slices [placement_start, placement_start + placement_size).
  int placement_start = 0;
  int placement_size = 0;

  friend bool operator==(const MigDevice&, const MigDevice&) = default;
};

struct Gpu {
  // NVML index; GPUs of a NodeTopology are stored in index order, so gpus[i].index == i.
  int index = 0;
  // "GPU-<uuid>".
  GpuUuid uuid;
  // nvmlDeviceGetName, e.g. "NVIDIA H100 80GB HBM3".
  std::string product;
  uint64_t memory_mib = 0;
  // NUMA node of the GPU's PCIe attachment; nullopt when unknown.
  std::optional<int> numa_node;
  // "00000000:18:00.0" (NVML) or "0000:18:00.0" (sysfs); empty when unknown.
  std::string pci_bus_id;
  Health health = Health::kHealthy;
  // Why the GPU is unhealthy ("XID 79"); empty when healthy.
  std::string health_reason;
  bool mig_enabled = false;
  // Only when mig_enabled; at most kMaxMigDevicesPerGpu.
  std::vector<MigDevice> mig_devices;
  // NVLink rate per link per direction, GB/s (25 for NVLink 2-4); 0 = no NVLink. Required
  // (> 0) for a GPU that has an NVLink in the matrix: Bandwidth() = links × the slower
  // end's rate.
  double nvlink_gbps_per_link = 0;

  friend bool operator==(const Gpu&, const Gpu&) = default;
};

}  // namespace phalanx::topology
