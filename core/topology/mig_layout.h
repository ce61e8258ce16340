// MIG layouts: the GPU-instance profiles of MIG-capable products and a helper that turns
// a list of profile names into MigDevices with valid placements, for the reference
// machines, the simulator and tests (the device plugin reads real layouts from NVML).
//
// Profiles follow NVIDIA's MIG user guide for A100 40GB, A100 80GB and H100 80GB: 7
// compute slices and 8 memory slices per GPU, each profile allowed only at certain
// start slices (e.g. 3g.40gb at 0 or 4). Memory sizes are representative NVML figures;
// they vary slightly across driver versions. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"
#include "core/topology/gpu.h"

namespace phalanx::topology {

inline constexpr int kMigComputeSlices = 7;

struct MigProfileSpec {
  std::string_view name;   // "3g.40gb"
  int compute_slices;      // the "3g"
  int memory_slices;       // placement size
  uint8_t allowed_starts;  // bit s set: the instance may start at memory slice s
  uint64_t memory_mib;     // as NVML reports for the MIG device
};

// The profile table for a product name (matched on "A100"/"H100" and the memory size in
// the name); empty if Phalanx has no table for it.
std::span<const MigProfileSpec> MigProfilesFor(std::string_view product);

// Enables MIG on `gpu` and replaces its MIG devices with one GPU instance (with one full
// compute instance, id 0) per entry of `profiles`, in that order. Placements are the
// first valid assignment in start-slice order (backtracking: "3g.40gb, 2g.20gb, 1g.10gb,
// 1g.10gb" puts the 3g instance at slice 4). GPU-instance ids are 1, 2, ... in list
// order; UUIDs are SyntheticUuid("MIG-", gpu.uuid, k).
// InvalidArgument (gpu unchanged) if the product has no table, a profile is unknown,
// more than kMaxMigDevicesPerGpu or kMigComputeSlices would be used, or no placement fits.
Status ApplyMigLayout(Gpu& gpu, const std::vector<std::string>& profiles);

}  // namespace phalanx::topology
