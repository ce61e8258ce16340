// ReleaseForecast: when will GPUs come free? Every running gang has an expected end
// (start + its duration hint, or its tier's default); per capacity pool the forecast
// keeps them sorted, so "when are N GPUs free?" is a binary search over a prefix sum.
// This is the shadow time of EASY backfilling (Lifka 1995; Mu'alem & Feitelson 2001):
// the head of a queue is promised the earliest time its GPU count is free, and later
// work may run meanwhile if it ends before then or fits in the GPUs left over.
//
// GPU counts only: it ignores topology and fragmentation, so it is an estimate; the
// planner decides what really fits. Overdue gangs (past their expected end) count as
// ending "now + overdue_grace". Not thread-safe.
#pragma once

#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/base/ids.h"

namespace phalanx::scheduling {

class ReleaseForecast {
 public:
  // `pool` is the capacity pool the gang runs in.
  void Add(const GangKey& key, const std::string& pool, double expected_end, int gpus);
  void Remove(const GangKey& key);
  bool Contains(const GangKey& key) const { return by_key_.contains(key); }

  struct Shadow {
    double start = 0;  // when `need` GPUs are expected free (now if already)
    int extra = 0;     // GPUs free at `start` beyond `need` (EASY's "extra nodes")
    bool reachable = true;  // false: even every running gang ending is not enough
  };
  // When `need` GPUs of `pool` ("" = every pool together) are expected free, given
  // `free_now` free already. Releases are counted in expected-end order; `without`
  // (a gang about to be evicted) releases nothing.
  Shadow When(const std::string& pool, int need, int free_now, double now, const GangKey* without = nullptr) const;

  // GPUs of `pool` expected free by `time` beyond `free_now` (releases at or before it).
  int ReleasedBy(const std::string& pool, double time, double now) const;

  double overdue_grace_s = 60;

 private:
  struct Entry {
    std::string pool;
    double end = 0;
    int gpus = 0;
  };
  struct PoolIndex {
    std::set<std::tuple<double, GangKey, int>> by_end;
    // Lazily rebuilt prefix sums over by_end (ends, cumulative GPUs).
    mutable std::vector<double> ends;
    mutable std::vector<GangKey> keys;  // same order as ends
    mutable std::vector<int> cumulative;
    mutable bool dirty = true;
  };
  const PoolIndex* Index(const std::string& pool) const;
  void Rebuild(const PoolIndex& index) const;

  std::map<GangKey, Entry> by_key_;
  std::map<std::string, PoolIndex> pools_;
  PoolIndex all_;  // every pool together, for gangs that take any pool
};

}  // namespace phalanx::scheduling
