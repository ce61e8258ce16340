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
  struct PoolIndex;

 public:
  ReleaseForecast() = default;
  // The indexes point into by_key_: a copy re-adds every gang (moves keep the nodes).
  ReleaseForecast(const ReleaseForecast& other);
  ReleaseForecast& operator=(const ReleaseForecast& other);
  ReleaseForecast(ReleaseForecast&&) = default;
  ReleaseForecast& operator=(ReleaseForecast&&) = default;

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

  // One pool's releases ("" = every pool), looked up once for many questions in a row (the
  // cost rule asks them of every candidate of every search); valid until the next Add or
  // Remove.
  class Pool {
   private:
    friend class ReleaseForecast;
    const PoolIndex* index_ = nullptr;
  };
  Pool PoolOf(const std::string& pool) const;
  Shadow When(Pool pool, int need, int free_now, double now) const;
  // When without one running gang's release: `without_gpus` GPUs at `without_end`, which
  // the caller knows the pool holds (the engine keeps every gang it runs at its expected
  // end). Equal to When(pool, need, free_now, now, &key) for that gang's key, found by its
  // end alone: no lookup by key, no key compares, one search when the need is met before it.
  Shadow WhenWithout(Pool pool, int need, int free_now, double now, double without_end, int without_gpus) const;

  // GPUs of `pool` expected free by `time` beyond `free_now` (releases at or before it).
  int ReleasedBy(const std::string& pool, double time, double now) const { return ReleasedBy(PoolOf(pool), time, now); }
  int ReleasedBy(Pool pool, double time, double now) const;

  // Calls visit(expected_end, key) for `pool`'s running gangs in (expected end, key) order
  // until it returns false.
  template <typename Visit>
  void InEndOrder(const std::string& pool, Visit visit) const {
    const PoolIndex* index = Index(pool);
    if (index == nullptr) return;
    for (size_t i = 0; i < index->ends.size(); ++i)
      if (!visit(index->ends[i], *index->keys[i])) return;
  }

  // Changes with every Add and Remove: a copy of a pool's releases (Curve) stays current
  // while it is unchanged.
  uint64_t version() const { return version_; }
  // One pool's releases as they stand now ("" = every pool), answering When without
  // `without` exactly as the forecast would have at this moment, after it changed (the
  // engine formats the reasons of the gangs a pass skipped when they are asked for).
  struct Curve {
    std::vector<double> ends;
    std::vector<int> cumulative;
    double overdue_grace_s = 60;
    Shadow When(int need, int free_now, double now) const;
  };
  Curve CurveOf(const std::string& pool) const;

  double overdue_grace_s = 60;

 private:
  struct Entry {
    std::string pool;
    double end = 0;
    int gpus = 0;
  };
  // One pool's running gangs in (expected end, key) order, as parallel arrays kept sorted
  // on every Add and Remove (a binary search and a move of plain values), so a query after
  // a change re-sums only the suffix that moved instead of rebuilding from a tree.
  struct PoolIndex {
    std::vector<double> ends;
    std::vector<const GangKey*> keys;  // into by_key_ (its nodes do not move)
    std::vector<int> gpus;
    // Prefix sums of gpus, valid for positions below `valid` (extended lazily).
    mutable std::vector<int> cumulative;
    mutable size_t valid = 0;
    // Position of (end, key), or where it would be inserted.
    size_t Position(double end, const GangKey& key) const;
    void Insert(double end, const GangKey* key, int gpus);
    void Erase(double end, const GangKey& key);
    bool empty() const { return ends.empty(); }
  };
  const PoolIndex* Index(const std::string& pool) const;
  // When's search once the index is current: releases from position `cut` on are `minus`
  // GPUs lower (the excluded gang's).
  Shadow WhenCut(const PoolIndex& index, int need, int free_now, double now, size_t cut, int minus) const;
  static void Rebuild(const PoolIndex& index);

  uint64_t version_ = 0;
  std::map<GangKey, Entry> by_key_;
  std::map<std::string, PoolIndex> pools_;
  PoolIndex all_;  // every pool together, for gangs that take any pool
};

}  // namespace phalanx::scheduling
