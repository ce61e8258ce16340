#include "core/placement/device_set_cache.h"

#include <bit>
#include <cmath>
#include <unordered_map>

namespace phalanx::placement {
namespace {

constexpr size_t kMaxEntries = 1 << 16;

struct Key {
  const BandwidthMatrix* matrix;
  GpuMask available;
  int count;
  bool operator==(const Key&) const = default;
};

struct KeyHash {
  size_t operator()(const Key& k) const noexcept {
    size_t h = std::hash<const void*>()(k.matrix);
    h ^= std::hash<uint64_t>()(k.available) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h ^= static_cast<size_t>(k.count) * 0xff51afd7ed558ccdull;
    return h;
  }
};

struct Entry {
  std::shared_ptr<const BandwidthMatrix> keep_alive;
  std::optional<CachedDeviceSet> choice;
};

std::unordered_map<Key, Entry, KeyHash>& Memo() {
  thread_local std::unordered_map<Key, Entry, KeyHash> memo;
  return memo;
}

GpuMask LowestBits(GpuMask mask, int count) {
  GpuMask out = 0;
  for (int i = 0; i < count && mask; ++i) {
    out |= mask & (~mask + 1);
    mask &= mask - 1;
  }
  return out;
}

}  // namespace

std::optional<CachedDeviceSet> ChooseDeviceSetCached(const std::shared_ptr<const BandwidthMatrix>& bandwidth,
                                                     GpuMask available, int count) {
  if (count < 1 || std::popcount(available) < count) return std::nullopt;
  if (!bandwidth) return CachedDeviceSet{LowestBits(available, count), 0};
  auto& memo = Memo();
  const Key key{bandwidth.get(), available, count};
  if (auto it = memo.find(key); it != memo.end()) return it->second.choice;
  if (memo.size() >= kMaxEntries) memo.clear();
  std::optional<CachedDeviceSet> choice;
  Result<DeviceSetChoice> r = ChooseDeviceSet(*bandwidth, DeviceSetRequest{count, available, 0});
  if (r.ok()) {
    GpuMask m = 0;
    for (int g : r->gpus) m |= GpuMask{1} << g;
    choice = CachedDeviceSet{m, r->ring_bandwidth_gbps};
  }
  memo.emplace(key, Entry{bandwidth, choice});
  return choice;
}

double BestRingCached(const std::shared_ptr<const BandwidthMatrix>& bandwidth, GpuMask healthy, int count) {
  if (!bandwidth) return 0;
  auto best = ChooseDeviceSetCached(bandwidth, healthy, count);
  return best ? best->ring_bandwidth_gbps : 0;
}

double TopologyRatio(const std::shared_ptr<const BandwidthMatrix>& bandwidth, GpuMask healthy, int count,
                     double ring_bandwidth_gbps) {
  if (!bandwidth || count <= 1) return 1.0;
  const double best = BestRingCached(bandwidth, healthy, count);
  if (!(best > 0) || std::isinf(best)) return 1.0;
  const double ratio = ring_bandwidth_gbps / best;
  return ratio > 1.0 ? 1.0 : ratio;
}

void ClearDeviceSetCacheForTest() { Memo().clear(); }

}  // namespace phalanx::placement
