// GPU queues: usage accounting and the admission rules (queues.h has the rules). Queues
// and pools are indexed so that a check is O(1) in the number of queues: each group's
// shared usage is kept up to date as gangs start and end.
#include "core/scheduling/queues.h"

#include <algorithm>
#include <limits>
#include <tuple>

#include <fmt/format.h>

namespace phalanx::scheduling {
namespace {

constexpr Milli kUnlimited = std::numeric_limits<Milli>::max() / 4;

std::string Gpus(Milli m) {
  if (m % kMilliGpu == 0) return fmt::format("{}", m / kMilliGpu);
  return fmt::format("{:.3g}", static_cast<double>(m) / kMilliGpu);
}

Milli Over(Milli used, Milli guaranteed) { return std::max<Milli>(0, used - guaranteed); }

}  // namespace

const PoolQuota* QueueSpec::QuotaOf(std::string_view pool) const {
  for (const PoolQuota& q : quotas)
    if (q.pool == pool) return &q;
  return nullptr;
}

QueueLedger::QueueLedger(QueueConfig config) {
  if (!config.Validate().ok()) return;
  config_ = std::move(config);
  const int n = static_cast<int>(config_.queues.size());
  queues_.resize(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    queues_[i].spec = &config_.queues[static_cast<size_t>(i)];
    ids_.emplace(config_.queues[static_cast<size_t>(i)].name, i);
  }
  std::map<std::string, int> cohorts;
  for (int i = 0; i < n; ++i) {
    Queue& q = queues_[static_cast<size_t>(i)];
    if (!q.spec->parent.empty()) {
      q.parent = ids_.at(q.spec->parent);
      queues_[static_cast<size_t>(q.parent)].children.push_back(i);
    }
  }
  // Groups: a parent's children; a cohort's top-level queues; a lone queue.
  for (int i = 0; i < n; ++i) {
    Queue& q = queues_[static_cast<size_t>(i)];
    if (q.parent >= 0) continue;
    if (!q.children.empty()) {
      const int g = static_cast<int>(groups_.size());
      groups_.push_back(q.children);
      for (int c : q.children) queues_[static_cast<size_t>(c)].group = g;
    }
    if (q.spec->cohort.empty()) {
      q.group = static_cast<int>(groups_.size());
      groups_.push_back({i});
      continue;
    }
    auto [it, added] = cohorts.emplace(q.spec->cohort, static_cast<int>(groups_.size()));
    if (added) groups_.emplace_back();
    q.group = it->second;
    groups_[static_cast<size_t>(q.group)].push_back(i);
  }
  for (int i = 0; i < n; ++i) {
    Queue& q = queues_[static_cast<size_t>(i)];
    for (const PoolQuota& p : q.spec->quotas) {
      const int pool = EnsurePool(p.pool);
      pools_[static_cast<size_t>(pool)].managed = true;
      q.quota_pools.push_back(pool);
    }
  }
}

int QueueLedger::IdOf(std::string_view queue) const {
  auto it = ids_.find(queue);
  return it == ids_.end() ? -1 : it->second;
}

int QueueLedger::PoolIdOf(std::string_view pool) const {
  auto it = pool_ids_.find(pool);
  return it == pool_ids_.end() ? -1 : it->second;
}

int QueueLedger::EnsurePool(const std::string& name) {
  if (int id = PoolIdOf(name); id >= 0) return id;
  const int id = static_cast<int>(pools_.size());
  pool_ids_.emplace(name, id);
  Pool p;
  p.name = name;
  const size_t n = queues_.size(), g = groups_.size();
  p.nominal.assign(n, 0);
  p.lendable.assign(n, 0);
  p.used.assign(n, 0);
  p.group_lendable.assign(g, 0);
  p.group_guaranteed.assign(g, 0);
  p.group_shared_used.assign(g, 0);
  p.held.assign(n, 0);
  p.group_held.assign(g, 0);
  for (size_t i = 0; i < n; ++i) {
    if (const PoolQuota* q = queues_[i].spec->QuotaOf(name)) {
      p.nominal[i] = q->nominal;
      p.lendable[i] = q->lending_limit ? std::min(q->nominal, *q->lending_limit) : q->nominal;
    }
    const auto group = static_cast<size_t>(queues_[i].group);
    p.group_lendable[group] += p.lendable[i];
    p.group_guaranteed[group] += p.nominal[i] - p.lendable[i];
  }
  pools_.push_back(std::move(p));
  return id;
}

bool QueueLedger::Manages(std::string_view pool) const {
  const int p = PoolIdOf(pool);
  return p >= 0 && pools_[static_cast<size_t>(p)].managed;
}

const QueueSpec* QueueLedger::Find(std::string_view queue) const {
  const int q = IdOf(queue);
  return q < 0 ? nullptr : queues_[static_cast<size_t>(q)].spec;
}

bool QueueLedger::IsLeaf(std::string_view queue) const {
  const int q = IdOf(queue);
  return q >= 0 && queues_[static_cast<size_t>(q)].children.empty();
}

const std::string& QueueLedger::Resolve(std::string_view queue) const {
  const int q = IdOf(queue);
  if (q >= 0 && queues_[static_cast<size_t>(q)].children.empty()) return queues_[static_cast<size_t>(q)].spec->name;
  return config_.default_queue;
}

void QueueLedger::SetCapacity(std::string_view pool, Milli capacity) {
  if (!enabled()) return;
  pools_[static_cast<size_t>(EnsurePool(std::string(pool)))].capacity = capacity;
}

void QueueLedger::SetPending(const std::map<std::pair<std::string, std::string>, Milli>& pending) {
  std::vector<std::tuple<int, int, Milli>> by_index;
  by_index.reserve(pending.size());
  for (const auto& [qp, amount] : pending) by_index.emplace_back(IdOf(qp.first), PoolIdOf(qp.second), amount);
  SetPendingByIndex(by_index);
}

void QueueLedger::SetPendingByIndex(const std::vector<std::tuple<int, int, Milli>>& pending) {
  for (Pool& p : pools_) {
    std::fill(p.held.begin(), p.held.end(), 0);
    std::fill(p.group_held.begin(), p.group_held.end(), 0);
  }
  for (const auto& [q, p, amount] : pending) {
    if (q < 0 || p < 0 || amount <= 0) continue;
    Pool& pool = pools_[static_cast<size_t>(p)];
    const auto i = static_cast<size_t>(q);
    const Milli unused = std::max<Milli>(0, std::min(pool.lendable[i], pool.nominal[i] - pool.used[i]));
    pool.held[i] = std::min(amount, unused);
    pool.group_held[static_cast<size_t>(queues_[i].group)] += pool.held[i];
  }
}

void QueueLedger::ChangeUsage(int q, int p, Milli delta) {
  Pool& pool = pools_[static_cast<size_t>(p)];
  const auto i = static_cast<size_t>(q);
  const Milli g = Guaranteed(q, p);
  const Milli before = Over(pool.used[i], g);
  pool.used[i] += delta;
  pool.group_shared_used[static_cast<size_t>(queues_[i].group)] += Over(pool.used[i], g) - before;
}

void QueueLedger::Add(const GangKey& key, const std::string& queue, const std::string& pool, Milli amount,
                      int priority, double started) {
  Remove(key);
  const int q = IdOf(queue);
  if (q < 0) return;
  const int p = EnsurePool(pool);
  gangs_.emplace(key, Gang{q, p, amount, priority, started, next_seq_++});
  ChangeUsage(q, p, amount);
  if (const int parent = queues_[static_cast<size_t>(q)].parent; parent >= 0) ChangeUsage(parent, p, amount);
  members_[{q, p}].insert(key);
  all_borrowing_.reset();
  reclaim_candidates_.clear();
  ++version_;
}

void QueueLedger::Remove(const GangKey& key) {
  auto it = gangs_.find(key);
  if (it == gangs_.end()) return;
  const Gang& g = it->second;
  ChangeUsage(g.queue, g.pool, -g.amount);
  if (const int parent = queues_[static_cast<size_t>(g.queue)].parent; parent >= 0) ChangeUsage(parent, g.pool, -g.amount);
  members_[{g.queue, g.pool}].erase(key);
  gangs_.erase(it);
  all_borrowing_.reset();
  reclaim_candidates_.clear();
  ++version_;
}

Milli QueueLedger::Usage(std::string_view queue, std::string_view pool) const {
  const int q = IdOf(queue), p = PoolIdOf(pool);
  return q < 0 || p < 0 ? 0 : pools_[static_cast<size_t>(p)].used[static_cast<size_t>(q)];
}

Milli QueueLedger::Nominal(std::string_view queue, std::string_view pool) const {
  const QueueSpec* s = Find(queue);
  const PoolQuota* q = s ? s->QuotaOf(pool) : nullptr;
  return q ? q->nominal : 0;
}

Milli QueueLedger::Nominal(int queue, int pool) const {
  // A pool the ledger does not know has no quota (every quota's pool is known from the start).
  if (queue < 0 || pool < 0) return 0;
  return pools_[static_cast<size_t>(pool)].nominal[static_cast<size_t>(queue)];
}

int QueueLedger::QueueIndex(std::string_view queue) const { return IdOf(queue); }

int QueueLedger::PoolIndex(std::string_view pool) const { return PoolIdOf(pool); }

int QueueLedger::ResolveIndex(std::string_view queue) const {
  const int q = IdOf(queue);
  if (q >= 0 && queues_[static_cast<size_t>(q)].children.empty()) return q;
  return IdOf(config_.default_queue);
}

const std::string& QueueLedger::QueueName(int queue) const { return queues_[static_cast<size_t>(queue)].spec->name; }

Milli QueueLedger::SharedCapacity(int q, int p) const {
  const Queue& queue = queues_[static_cast<size_t>(q)];
  const Pool& pool = pools_[static_cast<size_t>(p)];
  const auto group = static_cast<size_t>(queue.group);
  // Lendable quota its owners' waiting work covers is not lent (held as of the pass start).
  if (queue.parent < 0) return pool.group_lendable[group] - (pool.group_held[group] - pool.held[static_cast<size_t>(q)]);
  // Siblings share what their parent holds or may still take.
  const Milli parent_room = std::min(RoomOf(queue.parent, p), kUnlimited);
  return std::max<Milli>(0, pool.used[static_cast<size_t>(queue.parent)] + parent_room - pool.group_guaranteed[group]);
}

Milli QueueLedger::RoomOf(int q, int p) const {
  const Queue& queue = queues_[static_cast<size_t>(q)];
  const Pool& pool = pools_[static_cast<size_t>(p)];
  const auto i = static_cast<size_t>(q);
  const Milli nominal = pool.nominal[i], used = pool.used[i];
  const Milli within = nominal - used;
  if (queue.parent < 0 && queue.spec->cohort.empty()) return std::max<Milli>(0, within);
  const PoolQuota* quota = queue.spec->QuotaOf(pool.name);
  const Milli limit = quota && quota->borrowing_limit ? nominal + *quota->borrowing_limit - used : kUnlimited;
  const Milli borrow = std::max<Milli>(0, Guaranteed(q, p) - used) + SharedCapacity(q, p) -
                       pool.group_shared_used[static_cast<size_t>(queue.group)];
  return std::max<Milli>(0, std::max(within, std::min(limit, borrow)));
}

Milli QueueLedger::Room(std::string_view queue, std::string_view pool) const {
  const int q = IdOf(queue);
  if (q < 0) return 0;
  const int p = PoolIdOf(pool);
  if (p < 0) {
    // A pool nobody uses or has quota in: not managed, no usage; only borrowing from
    // nowhere — the nominal quota (0) is all there is.
    return 0;
  }
  return RoomOf(q, p);
}

QueueLedger::Fit QueueLedger::Check(std::string_view queue, std::string_view pool, Milli amount) const {
  return Check(IdOf(queue), PoolIdOf(pool), amount);
}

QueueLedger::Fit QueueLedger::Check(int q, int p, Milli amount) const {
  if (q < 0) return Fit::kNoRoom;
  if (p < 0 || !pools_[static_cast<size_t>(p)].managed) return Fit::kWithinNominal;  // not limited by queues
  const Pool& data = pools_[static_cast<size_t>(p)];
  if (data.used[static_cast<size_t>(q)] + amount <= data.nominal[static_cast<size_t>(q)]) return Fit::kWithinNominal;
  return amount <= RoomOf(q, p) ? Fit::kBorrowing : Fit::kNoRoom;
}

bool QueueLedger::WithinNominal(std::string_view queue, std::string_view pool, Milli amount) const {
  if (!pool.empty()) return Check(queue, pool, amount) == Fit::kWithinNominal;
  return WithinNominalOfAnyPool(IdOf(queue), amount);
}

bool QueueLedger::WithinNominalOfAnyPool(int q, Milli amount) const {
  if (q < 0) return false;
  const auto i = static_cast<size_t>(q);
  // Every quota's pool is known (the constructor adds them); usage per pool by index.
  const std::vector<PoolQuota>& quotas = queues_[i].spec->quotas;
  for (size_t k = 0; k < quotas.size(); ++k)
    if (pools_[static_cast<size_t>(queues_[i].quota_pools[k])].used[i] + amount <= quotas[k].nominal) return true;
  return false;
}

std::string QueueLedger::Explain(std::string_view queue, std::string_view pool, Milli amount) const {
  return Explaining(queue, pool).Text(amount);
}

QueueLedger::Explanation QueueLedger::Explaining(std::string_view queue, std::string_view pool) const {
  Explanation e;
  e.queue = std::string(queue);
  e.pool = std::string(pool);
  const QueueSpec* s = Find(queue);
  if (s == nullptr) {
    e.configured = false;
    return e;
  }
  e.used = Usage(queue, pool);
  e.nominal = Nominal(queue, pool);
  if (const PoolQuota* quota = s->QuotaOf(pool)) e.borrowing_limit = quota->borrowing_limit;
  if (!s->parent.empty() || !s->cohort.empty()) {
    e.group = s->parent.empty() ? "its cohort " + s->cohort : "its parent " + s->parent;
    e.room = Room(queue, pool);
  }
  return e;
}

std::string QueueLedger::Explanation::Text(Milli amount) const {
  if (!configured) return fmt::format("queue {} is not configured", queue);
  const std::string head = fmt::format("queue {} is at {}/{} nominal GPUs of {}", queue, Gpus(used), Gpus(nominal), pool);
  if (borrowing_limit && used + amount > nominal + *borrowing_limit) {
    return fmt::format("{} and may borrow at most {} beyond it; this gang needs {}", head, Gpus(*borrowing_limit),
                       Gpus(amount));
  }
  if (group.empty()) return head + " and has no cohort to borrow from";
  const Milli unused = std::max<Milli>(0, nominal - used);
  if (room <= unused) return fmt::format("{} and {} has none to lend", head, group);
  return fmt::format("{} and {} has {} to lend; this gang needs {}", head, group, Gpus(room - unused), Gpus(amount));
}

QueuePoolUsage QueueLedger::UsageOf(std::string_view queue, std::string_view pool) const {
  QueuePoolUsage u;
  u.pool = std::string(pool);
  u.nominal = Nominal(queue, pool);
  u.usage = Usage(queue, pool);
  u.borrowed = std::max<Milli>(0, u.usage - u.nominal);
  const int q = IdOf(queue), p = PoolIdOf(pool);
  if (q < 0 || p < 0) return u;
  const Pool& data = pools_[static_cast<size_t>(p)];
  // What the group borrows is spread over its lenders by their unused lendable quota.
  auto unused_of = [&](int m) {
    const auto i = static_cast<size_t>(m);
    return std::min(data.lendable[i], std::max<Milli>(0, data.nominal[i] - data.used[i]));
  };
  const Milli unused = unused_of(q);
  if (unused <= 0) return u;
  Milli borrowed = 0, lendable = 0;
  for (int m : groups_[static_cast<size_t>(queues_[static_cast<size_t>(q)].group)]) {
    const auto i = static_cast<size_t>(m);
    borrowed += std::max<Milli>(0, data.used[i] - data.nominal[i]);
    lendable += unused_of(m);
  }
  if (lendable > 0) u.lent = std::min(unused, borrowed * unused / lendable);
  return u;
}

std::vector<std::string> QueueLedger::Pools() const {
  std::vector<std::string> out;
  for (const Pool& p : pools_)
    if (p.managed || std::any_of(p.used.begin(), p.used.end(), [](Milli m) { return m > 0; })) out.push_back(p.name);
  std::sort(out.begin(), out.end());
  return out;
}

double QueueLedger::Share(std::string_view queue) const { return Share(IdOf(queue)); }

double QueueLedger::Share(int q) const {
  if (q < 0) return 0;
  const auto i = static_cast<size_t>(q);
  double share = 0;
  for (const Pool& p : pools_) {
    if (p.used[i] <= 0) continue;
    Milli capacity = p.capacity;
    if (capacity <= 0) {
      for (size_t m = 0; m < queues_.size(); ++m)
        if (queues_[m].parent < 0) capacity += p.nominal[m];
    }
    share = std::max(share, static_cast<double>(p.used[i]) / static_cast<double>(std::max<Milli>(capacity, kMilliGpu)));
  }
  return share / queues_[i].spec->weight;
}

bool QueueLedger::BelowNominal(std::string_view queue, std::string_view pool) const {
  const QueueSpec* s = Find(queue);
  if (s == nullptr) return false;
  if (!pool.empty()) return Usage(queue, pool) < Nominal(queue, pool);
  for (const PoolQuota& q : s->quotas)
    if (Usage(queue, q.pool) < q.nominal) return true;
  return false;
}

std::vector<GangKey> QueueLedger::BorrowingOf(int q, int p) const {
  std::vector<GangKey> out;
  auto it = members_.find({q, p});
  if (it == members_.end() || it->second.empty()) return out;
  const Pool& data = pools_[static_cast<size_t>(p)];
  Milli remaining = data.used[static_cast<size_t>(q)];
  const Milli nominal = data.nominal[static_cast<size_t>(q)];
  if (remaining <= nominal) return out;
  // Lowest priority, latest start (then latest added) first.
  std::vector<std::tuple<int, double, int64_t, GangKey>> order;
  for (const GangKey& k : it->second) {
    const Gang& g = gangs_.at(k);
    order.emplace_back(g.priority, -g.started, -static_cast<int64_t>(g.seq), k);
  }
  std::sort(order.begin(), order.end());
  for (const auto& [priority, neg_started, neg_seq, k] : order) {
    if (remaining <= nominal) break;
    out.push_back(k);
    remaining -= gangs_.at(k).amount;
  }
  return out;
}

std::vector<GangKey> QueueLedger::Borrowing(std::string_view queue, std::string_view pool) const {
  if (queue.empty() && pool.empty() && all_borrowing_) return *all_borrowing_;
  std::vector<GangKey> out;
  for (const auto& [qp, keys] : members_) {
    const QueueSpec* spec = queues_[static_cast<size_t>(qp.first)].spec;
    if ((!queue.empty() && spec->name != queue) || (!pool.empty() && pools_[static_cast<size_t>(qp.second)].name != pool)) {
      continue;
    }
    for (GangKey& k : BorrowingOf(qp.first, qp.second)) out.push_back(std::move(k));
  }
  if (queue.empty() && pool.empty()) all_borrowing_ = out;
  return out;
}

bool QueueLedger::IsBorrowing(const GangKey& key) const {
  if (!gangs_.contains(key)) return false;
  if (!all_borrowing_) Borrowing();
  return std::find(all_borrowing_->begin(), all_borrowing_->end(), key) != all_borrowing_->end();
}

bool QueueLedger::SameGroup(std::string_view a, std::string_view b) const { return SameGroup(IdOf(a), IdOf(b)); }

bool QueueLedger::SameGroup(int qa, int qb) const {
  if (qa < 0 || qb < 0) return false;
  if (qa == qb) return true;
  const Queue& x = queues_[static_cast<size_t>(qa)];
  const Queue& y = queues_[static_cast<size_t>(qb)];
  if (x.group == y.group) return true;  // siblings, or one cohort
  const int ta = x.parent >= 0 ? x.parent : qa;
  const int tb = y.parent >= 0 ? y.parent : qb;
  return ta == tb || queues_[static_cast<size_t>(ta)].group == queues_[static_cast<size_t>(tb)].group;
}

std::vector<GangKey> QueueLedger::ReclaimCandidates(std::string_view queue, std::string_view pool) const {
  return ReclaimCandidates(IdOf(queue), PoolIdOf(pool));
}

const std::vector<GangKey>& QueueLedger::ReclaimCandidates(int q, int p) const {
  auto [it, added] = reclaim_candidates_.try_emplace({q, p});
  if (!added || q < 0 || p < 0) return it->second;
  if (!all_borrowing_) Borrowing();
  for (const GangKey& k : *all_borrowing_) {
    const Gang& g = gangs_.at(k);
    if (g.pool == p && g.queue != q && SameGroup(q, g.queue)) it->second.push_back(k);
  }
  return it->second;
}

}  // namespace phalanx::scheduling
