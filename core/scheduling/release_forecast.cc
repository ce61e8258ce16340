#include "core/scheduling/release_forecast.h"

#include <algorithm>

namespace phalanx::scheduling {

size_t ReleaseForecast::PoolIndex::Position(double end, const GangKey& key) const {
  const auto lo = std::lower_bound(ends.begin(), ends.end(), end);
  const auto hi = std::upper_bound(lo, ends.end(), end);
  const auto first = keys.begin() + (lo - ends.begin());
  const auto last = keys.begin() + (hi - ends.begin());
  return static_cast<size_t>(
      std::lower_bound(first, last, &key, [](const GangKey* a, const GangKey* b) { return *a < *b; }) - keys.begin());
}

void ReleaseForecast::PoolIndex::Insert(double end, const GangKey* key, int g) {
  const size_t at = Position(end, *key);
  const auto offset = static_cast<std::ptrdiff_t>(at);
  ends.insert(ends.begin() + offset, end);
  keys.insert(keys.begin() + offset, key);
  gpus.insert(gpus.begin() + offset, g);
  valid = std::min(valid, at);
}

void ReleaseForecast::PoolIndex::Erase(double end, const GangKey& key) {
  const size_t at = Position(end, key);
  if (at >= keys.size() || *keys[at] != key) return;
  const auto offset = static_cast<std::ptrdiff_t>(at);
  ends.erase(ends.begin() + offset);
  keys.erase(keys.begin() + offset);
  gpus.erase(gpus.begin() + offset);
  valid = std::min(valid, at);
}

ReleaseForecast::ReleaseForecast(const ReleaseForecast& other) : overdue_grace_s(other.overdue_grace_s) {
  for (const auto& [key, e] : other.by_key_) Add(key, e.pool, e.end, e.gpus);
}

ReleaseForecast& ReleaseForecast::operator=(const ReleaseForecast& other) {
  if (this != &other) *this = ReleaseForecast(other);
  return *this;
}

void ReleaseForecast::Add(const GangKey& key, const std::string& pool, double expected_end, int gpus) {
  Remove(key);
  ++version_;
  auto [it, added] = by_key_.insert_or_assign(key, Entry{pool, expected_end, gpus});
  for (PoolIndex* index : {&pools_[pool], &all_}) index->Insert(expected_end, &it->first, gpus);
}

void ReleaseForecast::Remove(const GangKey& key) {
  auto it = by_key_.find(key);
  if (it == by_key_.end()) return;
  ++version_;
  const Entry& e = it->second;
  for (PoolIndex* index : {&pools_[e.pool], &all_}) index->Erase(e.end, key);
  by_key_.erase(it);
}

const ReleaseForecast::PoolIndex* ReleaseForecast::Index(const std::string& pool) const {
  if (pool.empty()) return &all_;
  auto it = pools_.find(pool);
  return it == pools_.end() ? nullptr : &it->second;
}

void ReleaseForecast::Rebuild(const PoolIndex& index) {
  const size_t n = index.gpus.size();
  if (index.valid >= n && index.cumulative.size() == n) return;
  index.cumulative.resize(n);
  for (size_t i = index.valid; i < n; ++i) index.cumulative[i] = (i == 0 ? 0 : index.cumulative[i - 1]) + index.gpus[i];
  index.valid = n;
}

ReleaseForecast::Shadow ReleaseForecast::When(const std::string& pool, int need, int free_now, double now,
                                              const GangKey* without) const {
  if (free_now >= need) return Shadow{now, free_now - need, true};
  const PoolIndex* index = Index(pool);
  if (index == nullptr || index->empty()) return Shadow{now, 0, false};
  Rebuild(*index);
  // The excluded gang's release: cumulative sums from its position on are `minus` lower.
  size_t cut = index->ends.size();
  int minus = 0;
  if (without != nullptr) {
    if (auto e = by_key_.find(*without); e != by_key_.end() && (pool.empty() || e->second.pool == pool)) {
      // Its position in (end, key) order, by binary search over the sorted arrays.
      const size_t k = index->Position(e->second.end, *without);
      if (k < index->keys.size() && *index->keys[k] == *without) {
        cut = k;
        minus = e->second.gpus;
      }
    }
  }
  return WhenCut(*index, need, free_now, now, cut, minus);
}

ReleaseForecast::Pool ReleaseForecast::PoolOf(const std::string& pool) const {
  Pool p;
  p.index_ = Index(pool);
  return p;
}

ReleaseForecast::Shadow ReleaseForecast::When(Pool pool, int need, int free_now, double now) const {
  if (free_now >= need) return Shadow{now, free_now - need, true};
  const PoolIndex* index = pool.index_;
  if (index == nullptr || index->empty()) return Shadow{now, 0, false};
  Rebuild(*index);
  return WhenCut(*index, need, free_now, now, index->ends.size(), 0);
}

ReleaseForecast::Shadow ReleaseForecast::WhenWithout(Pool pool, int need, int free_now, double now,
                                                     double without_end, int without_gpus) const {
  if (free_now >= need) return Shadow{now, free_now - need, true};
  const PoolIndex* index = pool.index_;
  if (index == nullptr || index->empty()) return Shadow{now, 0, false};
  Rebuild(*index);
  const std::vector<double>& ends = index->ends;
  const std::vector<int>& cumulative = index->cumulative;
  const int missing = need - free_now;
  // The releases before the gang's end are unchanged: if they cover the need, the answer
  // is When's. Else its group (every release at its end) comes next: together, less the
  // gang's own GPUs, wherever the gang lies among them; then the rest, each less them.
  const auto lo = std::lower_bound(ends.begin(), ends.end(), without_end);
  const auto cut = cumulative.begin() + (lo - ends.begin());
  auto i = std::lower_bound(cumulative.begin(), cut, missing);
  int minus = 0;
  if (i == cut) {
    const auto hi = cumulative.begin() + (std::upper_bound(lo, ends.end(), without_end) - ends.begin());
    minus = without_gpus;
    i = hi != cut && *std::prev(hi) - minus >= missing ? std::prev(hi)
                                                         : std::lower_bound(hi, cumulative.end(), missing + minus);
  }
  if (i == cumulative.end()) return Shadow{now, 0, false};
  // Everything ending at the same instant is released together.
  auto last = static_cast<size_t>(i - cumulative.begin());
  const double end = ends[last];
  while (last + 1 < ends.size() && ends[last + 1] == end) ++last;
  const double start = end < now ? now + overdue_grace_s : end;
  return Shadow{start, free_now + cumulative[last] - minus - need, true};
}

ReleaseForecast::Shadow ReleaseForecast::WhenCut(const PoolIndex& index, int need, int free_now, double now,
                                                 size_t cut, int minus) const {
  auto cumulative = [&](size_t i) { return index.cumulative[i] - (i >= cut ? minus : 0); };
  const int missing = need - free_now;
  // First position whose (adjusted) cumulative release covers `missing`: before the cut
  // the sums are unchanged, after it they are shifted by `minus` (still sorted).
  size_t i = static_cast<size_t>(
      std::lower_bound(index.cumulative.begin(), index.cumulative.begin() + static_cast<std::ptrdiff_t>(cut), missing) -
      index.cumulative.begin());
  if (i == cut && cut < index.ends.size()) {
    i = static_cast<size_t>(std::lower_bound(index.cumulative.begin() + static_cast<std::ptrdiff_t>(cut),
                                             index.cumulative.end(), missing + minus) -
                            index.cumulative.begin());
  }
  if (i >= index.ends.size()) return Shadow{now, 0, false};
  // Everything ending at the same instant is released together.
  size_t last = i;
  while (last + 1 < index.ends.size() && index.ends[last + 1] == index.ends[i]) ++last;
  const double start = index.ends[i] < now ? now + overdue_grace_s : index.ends[i];
  return Shadow{start, free_now + cumulative(last) - need, true};
}

ReleaseForecast::Curve ReleaseForecast::CurveOf(const std::string& pool) const {
  Curve c;
  c.overdue_grace_s = overdue_grace_s;
  const PoolIndex* index = Index(pool);
  if (index == nullptr || index->empty()) return c;
  Rebuild(*index);
  c.ends = index->ends;
  c.cumulative = index->cumulative;
  return c;
}

// When's search without an excluded gang, on the copy.
ReleaseForecast::Shadow ReleaseForecast::Curve::When(int need, int free_now, double now) const {
  if (free_now >= need) return Shadow{now, free_now - need, true};
  if (ends.empty()) return Shadow{now, 0, false};
  const int missing = need - free_now;
  const auto i = static_cast<size_t>(std::lower_bound(cumulative.begin(), cumulative.end(), missing) - cumulative.begin());
  if (i >= ends.size()) return Shadow{now, 0, false};
  size_t last = i;
  while (last + 1 < ends.size() && ends[last + 1] == ends[i]) ++last;
  const double start = ends[i] < now ? now + overdue_grace_s : ends[i];
  return Shadow{start, free_now + cumulative[last] - need, true};
}

int ReleaseForecast::ReleasedBy(Pool pool, double time, double now) const {
  const PoolIndex* index = pool.index_;
  if (index == nullptr || index->empty() || time < now) return 0;
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
