// GpuInventory: what NVML says about this machine's GPUs, as plain values.
//
// Produced by DiscoverGpus() (gpu_discovery.h); consumed by the device plugin (device
// IDs, NUMA topology hints, MIG resources), the topology publisher and `phalanx
// topology`. Deliberately free of NVML handles and of core/topology types: a later
// slice maps it onto NodeTopology.
//
// Invariants: gpus are in NVML index order; links is gpus.size() x gpus.size(),
// symmetric, indexed by position in `gpus` (not by GPU index). A GPU whose `status`
// is not OK is listed with whatever could be read (at least `index`); its links are
// kUnknown with no NVLinks.
// Thread-compatible value types.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/ids.h"
#include "core/base/status.h"

namespace phalanx::nvml {

// Closest common PCIe ancestor of two GPUs, in nvidia-smi `topo -m` vocabulary.
enum class PcieLevel {
  kUnknown,
  kInternal,    // X:    the same GPU
  kSingle,      // PIX:  at most one PCIe switch
  kMultiple,    // PXB:  several PCIe switches, no host bridge
  kHostBridge,  // PHB:  through one PCIe host bridge
  kNode,        // NODE: host bridges within one NUMA node
  kSystem,      // SYS:  across NUMA nodes
};

// "X", "PIX", "PXB", "PHB", "NODE", "SYS"; "?" for kUnknown.
std::string_view PcieLevelName(PcieLevel level);

struct MigDeviceInfo {
  GpuUuid uuid;                // "MIG-..."
  std::string profile;         // "1g.10gb", "3g.40gb", "1g.10gb+me"
  unsigned int gpu_instance_id = 0;
  unsigned int compute_instance_id = 0;
  unsigned int slices = 0;     // GPU (compute) slices of the GPU instance profile
  unsigned int placement_start = 0;  // first memory slice
  unsigned int placement_size = 0;   // memory slices
  uint64_t memory_mib = 0;
};

struct GpuInfo {
  unsigned int index = 0;      // NVML index (nvidia-smi order)
  GpuUuid uuid;                // "GPU-..."
  std::string name;            // "NVIDIA H100 80GB HBM3"
  uint64_t memory_mib = 0;     // total framebuffer
  std::string pci_bus_id;      // "00000000:18:00.0" (NVML's 8-digit-domain form)
  std::optional<int> numa_node;  // absent when the platform reports none (-1)
  bool mig_capable = false;
  bool mig_enabled = false;    // current MIG mode
  bool mig_pending = false;    // pending MIG mode (takes effect after a GPU reset)
  std::vector<MigDeviceInfo> mig_devices;  // only when mig_enabled
  // nvmlDeviceGetNvLinkVersion of the first active link (nvmlNvlinkVersion_t on current
  // drivers), 0 when the GPU has no active NVLink.
  unsigned int nvlink_version = 0;
  // OK, or why this GPU could not be read completely (e.g. kUnavailable
  // "... (NVML_ERROR_GPU_IS_LOST)"). Such a GPU must not be advertised as healthy.
  Status status;
};

// Relation of one GPU pair.
struct GpuLink {
  // NVLinks usable between the pair: direct bridges plus, through NVSwitches both reach,
  // the narrower attachment (see link_discovery.cc). 0 = no NVLink path.
  int nvlinks = 0;
  bool via_nvswitch = false;   // at least part of `nvlinks` goes through NVSwitches
  PcieLevel pcie = PcieLevel::kUnknown;
};

// "NV18" when the pair has NVLinks, else the PCIe level name ("PHB", "SYS", ...); "X"
// for a GPU with itself. The cell text of `nvidia-smi topo -m`.
std::string LinkLabel(const GpuLink& link);

struct GpuInventory {
  std::string driver_version;      // "535.129.03"; empty if NVML could not tell
  int cuda_driver_version = 0;     // 12020 = CUDA 12.2; 0 if unknown
  std::vector<GpuInfo> gpus;
  std::vector<std::vector<GpuLink>> links;

  // Position in `gpus` of the GPU with `uuid`, or -1.
  int FindGpu(const GpuUuid& uuid) const;
};

}  // namespace phalanx::nvml
