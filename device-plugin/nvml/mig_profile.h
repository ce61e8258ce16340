// MIG profile names ("1g.10gb", "3g.40gb", "1g.10gb+me") from NVML's numbers, with the
// rounding NVIDIA's tools use so names match nvidia-smi and the NVIDIA device plugin's
// resource names (nvidia.com/mig-1g.10gb).
//
// memory GB = round(ceil(8 * mig_mib / gpu_mib) / 8 * ceil(gpu_bytes / GiB)):
// the instance's share of the GPU, rounded up to an eighth (the memory-slice
// granularity), times the GPU's size in whole GB. E.g. A100-SXM4-80GB (81920 MiB):
// a 9728 MiB instance is 0.119 -> 1/8 -> 10 GB -> "1g.10gb"; H100 80GB HBM3
// (81559 MiB -> 80 GB) gives the same names.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>

namespace phalanx::nvml {

struct MigProfileSpec {
  unsigned int slices = 0;           // GPU (compute) slices
  uint64_t memory_mib = 0;           // instance memory (profile memorySizeMB)
  bool media_extensions = false;     // *_REV1 profiles: "+me"
};

// Memory in GB as it appears in the profile name; 0 if gpu_memory_mib is 0.
uint64_t MigMemoryGb(uint64_t mig_memory_mib, uint64_t gpu_memory_mib);

// "<slices>g.<GB>gb[+me]".
std::string MigProfileName(const MigProfileSpec& spec, uint64_t gpu_memory_mib);

}  // namespace phalanx::nvml
