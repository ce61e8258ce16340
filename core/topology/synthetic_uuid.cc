#include "core/topology/synthetic_uuid.h"

#include <fmt/format.h>

namespace phalanx::topology {
namespace {

// splitmix64 finaliser: a cheap bijective mixer with good avalanche, enough to make
// neighbouring (seed, n) pairs look unrelated.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

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
  uint64_t hi = Mix(Fnv1a(seed) ^ Mix(n));
  uint64_t lo = Mix(hi ^ 0x5851f42d4c957f2dULL);
  return fmt::format("{}{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", prefix, hi >> 32, (hi >> 16) & 0xffff,
                     hi & 0xffff, lo >> 48, lo & 0xffffffffffffULL);
}

}  // namespace phalanx::topology
