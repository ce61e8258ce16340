// SyntheticUuid: deterministic UUID-shaped identifiers for machines that exist only in
// tests and the simulator ("GPU-1b4e28ba-2fa1-11d2-883f-0016d3cca427" style). The same
// (prefix, seed, n) always gives the same string, different seeds or n give different
// ones with overwhelming probability. Not NVML's algorithm; never used for real GPUs.
// Pure; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace phalanx::topology {

// `prefix` + 8-4-4-4-12 lowercase hex digits derived from (seed, n).
std::string SyntheticUuid(std::string_view prefix, std::string_view seed, uint64_t n);

}  // namespace phalanx::topology
