// ValidateTopology: the semantic rules of the `phalanx.io/gpu-topology` contract
// (docs/contracts/gpu-topology.md §Validation), checked on the model so that the encoder
// refuses what the decoder would reject and both report the same messages.
//
// Every error is InvalidArgument and starts with the JSON path of the offending field
// in the annotation, e.g. `gpus[3].uuid: duplicate of gpus[1].uuid`. The first violation
// found wins (GPUs in order, then their MIG devices, then links, then node fields).
// Pure; thread-safe (no state).
#pragma once

#include <cstdint>
#include <string_view>

#include "core/base/status.h"
#include "core/topology/node_topology.h"

namespace phalanx::topology {

// Range limits of numeric fields (inclusive).
inline constexpr int kMaxNumaNode = 1023;
inline constexpr uint64_t kMaxMemoryMiB = uint64_t{1} << 24;  // 16 TiB
inline constexpr int kMaxMigInstanceId = 255;
inline constexpr double kMaxNvlinkGbpsPerLink = 1000.0;
// Length limits of string fields, bytes.
inline constexpr size_t kMaxUuidLength = 128;
inline constexpr size_t kMaxProductLength = 256;
inline constexpr size_t kMaxReasonLength = 1024;
inline constexpr size_t kMaxVersionLength = 64;
inline constexpr size_t kMaxLabelValueLength = 63;

Status ValidateTopology(const NodeTopology& topology);

// True for nvidia-smi MIG profile names: [<c>c.]<g>g.<m>gb[+<attr>]..., e.g. "1g.10gb",
// "1c.3g.40gb", "1g.10gb+me"; 1 <= c <= g <= 8.
bool IsMigProfileName(std::string_view profile);

// True for "DDDD:BB:DD.F" or "DDDDDDDD:BB:DD.F" (hex, either case), the sysfs and NVML
// spellings of a PCI address.
bool IsPciBusId(std::string_view bus_id);

}  // namespace phalanx::topology
