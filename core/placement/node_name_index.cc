#include "core/placement/node_name_index.h"

#include <cstring>
#include <utility>

namespace phalanx::placement {

uint64_t NodeNameIndex::Hash(std::string_view name) {
  // Eight bytes a step (the last step overlapping the one before), each mixed in with a
  // multiply, then a final mix so nearby names ("node-00017", "node-00018") spread over the
  // low bits the table indexes by. Byte-at-a-time FNV-1a was ~7 % of a 5,000-name filter.
  constexpr uint64_t kMul = 0x9e3779b97f4a7c15ull;
  const char* p = name.data();
  const size_t n = name.size();
  uint64_t h = 0xcbf29ce484222325ull ^ (n * kMul);
  auto mix = [&](uint64_t word) {
    h = (h ^ word) * kMul;
    h ^= h >> 29;
  };
  if (n >= 8) {
    uint64_t word;
    for (size_t i = 0; i + 8 < n; i += 8) {
      std::memcpy(&word, p + i, 8);
      mix(word);
    }
    std::memcpy(&word, p + n - 8, 8);
    mix(word);
  } else {
    uint64_t word = 0;
    for (size_t i = 0; i < n; ++i) word |= static_cast<uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
    mix(word);
  }
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

void NodeNameIndex::Grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(old.empty() ? 16 : old.size() * 2, Slot{});
  mask_ = slots_.size() - 1;
  for (const Slot& s : old) {
    if (s.index < 0) continue;
    size_t i = s.hash & mask_;
    while (slots_[i].index >= 0) i = (i + 1) & mask_;
    slots_[i] = s;
  }
}

void NodeNameIndex::Insert(std::string_view name, int32_t index) {
  if ((size_ + 1) * 2 > slots_.size()) Grow();
  const uint64_t h = Hash(name);
  size_t i = h & mask_;
  while (slots_[i].index >= 0) i = (i + 1) & mask_;
  slots_[i] = Slot{h, index};
  ++size_;
}

void NodeNameIndex::Erase(std::string_view name, const NameOf& name_of) {
  if (slots_.empty()) return;
  const uint64_t h = Hash(name);
  size_t i = h & mask_;
  for (;; i = (i + 1) & mask_) {
    if (slots_[i].index < 0) return;
    if (slots_[i].hash == h && name_of(slots_[i].index) == name) break;
  }
  // Backward-shift deletion: move later entries of the probe run into the hole when their
  // home slot does not lie cyclically in (hole, current].
  size_t hole = i;
  for (size_t j = (i + 1) & mask_; slots_[j].index >= 0; j = (j + 1) & mask_) {
    const size_t home = slots_[j].hash & mask_;
    const bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
    if (stays) continue;
    slots_[hole] = slots_[j];
    hole = j;
  }
  slots_[hole] = Slot{};
  --size_;
}

}  // namespace phalanx::placement
