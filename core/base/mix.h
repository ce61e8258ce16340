// splitmix64's finaliser: a cheap bijective 64-bit mixer with good avalanche. Used where a
// value must look random but depend only on its inputs (seed, id), never on call order:
// synthetic GPU UUIDs, the simulator's per-job hint noise.
#pragma once

#include <cstdint>

namespace phalanx {

inline uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace phalanx
