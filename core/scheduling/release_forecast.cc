#include "core/scheduling/release_forecast.h"

#include <algorithm>

namespace phalanx::scheduling {

void ReleaseForecast::Add(const GangKey& key, const std::string& pool, double expected_end, int gpus) {
  Remove(key);
  by_key_[key] = Entry{pool, expected_end, gpus};
  for (PoolIndex* index : {&pools_[pool], &all_}) {
    index->by_end.emplace(expected_end, key, gpus);
    index->dirty = true;
  }
}

void ReleaseForecast::Remove(const GangKey& key) {
  auto it = by_key_.find(key);
  if (it == by_key_.end()) return;
  const Entry& e = it->second;
  for (PoolIndex* index : {&pools_[e.pool], &all_}) {
    index->by_end.erase({e.end, key, e.gpus});
    index->dirty = true;
  }
  by_key_.erase(it);
}

const ReleaseForecast::PoolIndex* ReleaseForecast::Index(const std::string& pool) const {
  if (pool.empty()) return &all_;
  auto it = pools_.find(pool);
  return it == pools_.end() ? nullptr : &it->second;
}

void ReleaseForecast::Rebuild(const PoolIndex& index) const {
  if (!index.dirty) return;
  index.ends.clear();
  index.keys.clear();
  index.cumulative.clear();
  int sum = 0;
  for (const auto& [end, key, gpus] : index.by_end) {
    sum += gpus;
    index.ends.push_back(end);
    index.keys.push_back(key);
    index.cumulative.push_back(sum);
  }
  index.dirty = false;
}

ReleaseForecast::Shadow ReleaseForecast::When(const std::string& pool, int need, int free_now, double now,
                                              const GangKey* without) const {
  if (free_now >= need) return Shadow{now, free_now - need, true};
  const PoolIndex* index = Index(pool);
  if (index == nullptr || index->by_end.empty()) return Shadow{now, 0, false};
  Rebuild(*index);
  // The excluded gang's release: cumulative sums from its position on are `minus` lower.
  size_t cut = index->ends.size();
  int minus = 0;
  if (without != nullptr) {
    if (auto e = by_key_.find(*without); e != by_key_.end() && (pool.empty() || e->second.pool == pool)) {
      // Its position in (end, key) order, by binary search over the rebuilt arrays.
      const auto lo = std::lower_bound(index->ends.begin(), index->ends.end(), e->second.end);
      const auto hi = std::upper_bound(lo, index->ends.end(), e->second.end);
      const auto first = index->keys.begin() + (lo - index->ends.begin());
      const auto last = index->keys.begin() + (hi - index->ends.begin());
      const auto k = std::lower_bound(first, last, *without);
      if (k != last && *k == *without) {
        cut = static_cast<size_t>(k - index->keys.begin());
        minus = e->second.gpus;
      }
    }
  }
  auto cumulative = [&](size_t i) { return index->cumulative[i] - (i >= cut ? minus : 0); };
  const int missing = need - free_now;
  // First position whose (adjusted) cumulative release covers `missing`: before the cut
  // the sums are unchanged, after it they are shifted by `minus` (still sorted).
  size_t i = static_cast<size_t>(
      std::lower_bound(index->cumulative.begin(), index->cumulative.begin() + static_cast<std::ptrdiff_t>(cut), missing) -
      index->cumulative.begin());
  if (i == cut && cut < index->ends.size()) {
    i = static_cast<size_t>(std::lower_bound(index->cumulative.begin() + static_cast<std::ptrdiff_t>(cut),
                                             index->cumulative.end(), missing + minus) -
                            index->cumulative.begin());
  }
  if (i >= index->ends.size()) return Shadow{now, 0, false};
  // Everything ending at the same instant is released together.
  size_t last = i;
  while (last + 1 < index->ends.size() && index->ends[last + 1] == index->ends[i]) ++last;
  const double start = index->ends[i] < now ? now + overdue_grace_s : index->ends[i];
  return Shadow{start, free_now + cumulative(last) - need, true};
}

int ReleaseForecast::ReleasedBy(const std::string& pool, double time, double now) const {
  const PoolIndex* index = Index(pool);
  if (index == nullptr || index->by_end.empty() || time < now) return 0;
  Rebuild(*index);
  auto cum_before = [&](std::vector<double>::const_iterator it) {
    return it == index->ends.begin() ? 0 : index->cumulative[static_cast<size_t>(it - index->ends.begin()) - 1];
  };
  const auto by_time = std::upper_bound(index->ends.begin(), index->ends.end(), time);
  if (time >= now + overdue_grace_s) return cum_before(by_time);
  // Overdue gangs (expected end already past) are not expected before now + grace.
  const auto overdue = std::lower_bound(index->ends.begin(), index->ends.end(), now);
  return cum_before(by_time) - cum_before(overdue);
}

}  // namespace phalanx::scheduling
