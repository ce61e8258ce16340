// NodeNameIndex: node name -> NodeIndex as one flat open-addressing table (linear probing,
// backward-shift deletion), for the extender's hot path: a filter or prioritize call resolves
// up to 5,000 candidate names. std::unordered_map chases a heap pointer per bucket and per
// node, and on the (nested-virtualised) build machines those scattered misses were 2/3 of the
// filter's server time (bench/RESULTS.md, Extender); here a lookup reads one 16-byte slot
// of a contiguous array, then the caller's copy of the name to confirm the match.
// Names are not stored: Find takes a function returning the name of an index, so the index
// never disagrees with the node table. Pure; thread-compatible.
#pragma once

#include <cstdint>
#include <functional>
#include <algorithm>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace phalanx::placement {

class NodeNameIndex {
 public:
  using NameOf = std::function<std::string_view(int32_t index)>;

  // Adds name -> index (the name must not be present).
  void Insert(std::string_view name, int32_t index);
  // Removes name; no-op if absent.
  void Erase(std::string_view name, const NameOf& name_of);
  std::optional<int32_t> Find(std::string_view name, const NameOf& name_of) const {
    return FindWith(name, name_of);
  }
  // Template form for the hot path (no std::function call per probe).
  template <class F>
  std::optional<int32_t> FindWith(std::string_view name, const F& name_of) const {
    if (slots_.empty()) return std::nullopt;
    const uint64_t h = Hash(name);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.index < 0) return std::nullopt;
      if (s.hash == h && name_of(s.index) == name) return s.index;
    }
  }
  // Find for many names at once (out[i] = -1 where absent): every hash first, then every
  // probe, then every confirming compare, each pass loading ahead of itself. One name at a
  // time, each lookup's cache misses (slot, then the node's name) waited behind the previous
  // name's; a batch keeps several in flight. `prefetch_name(index)` starts loading the name
  // of an index that the confirming pass will read.
  template <class F, class P>
  void FindMany(std::span<const std::string_view> names, std::span<int32_t> out, const F& name_of,
                const P& prefetch_name) const {
    const size_t n = names.size();
    if (slots_.empty()) {
      std::fill(out.begin(), out.end(), -1);
      return;
    }
    std::vector<uint64_t> hashes(n);
    for (size_t i = 0; i < n; ++i) {
      hashes[i] = Hash(names[i]);
      __builtin_prefetch(&slots_[hashes[i] & mask_]);
    }
    // The first slot of the probe run with the same hash: almost always the name's own.
    for (size_t i = 0; i < n; ++i) {
      int32_t found = -1;
      for (size_t j = hashes[i] & mask_;; j = (j + 1) & mask_) {
        const Slot& s = slots_[j];
        if (s.index < 0) break;
        if (s.hash == hashes[i]) {
          found = s.index;
          break;
        }
      }
      out[i] = found;
      if (found >= 0) prefetch_name(found);
    }
    for (size_t i = 0; i < n; ++i) {
      // Another name with the same hash (or none): the full probe decides.
      if (out[i] >= 0 && name_of(out[i]) != names[i]) out[i] = FindWith(names[i], name_of).value_or(-1);
    }
  }
  size_t size() const { return size_; }

  static uint64_t Hash(std::string_view name);

 private:
  struct Slot {
    uint64_t hash = 0;
    int32_t index = -1;  // -1 = empty
  };
  void Grow();

  std::vector<Slot> slots_;  // power-of-two size, at most half full
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace phalanx::placement
