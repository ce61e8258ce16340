#include "core/topology/synthetic_uuid.h"

#include <fmt/format.h>

#include "core/base/mix.h"

namespace phalanx::topology {
namespace {

uint64_t Fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace

std::string SyntheticUuid(std::string_view prefix, std::string_view seed, uint64_t n) {
  uint64_t hi = SplitMix64(Fnv1a(seed) ^ SplitMix64(n));
  uint64_t lo = SplitMix64(hi ^ 0x5851f42d4c957f2dULL);
  return fmt::format("{}{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", prefix, hi >> 32, (hi >> 16) & 0xffff,
                     hi & 0xffff, lo >> 48, lo & 0xffffffffffffULL);
}

}  // namespace phalanx::topology
