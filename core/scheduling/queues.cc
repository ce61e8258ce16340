// GPU queues: usage accounting and the admission rules (queues.h has the rules).
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

}  // namespace

const PoolQuota* QueueSpec::QuotaOf(std::string_view pool) const {
  for (const PoolQuota& q : quotas)
    if (q.pool == pool) return &q;
  return nullptr;
}

QueueLedger::QueueLedger(QueueConfig config) {
  if (!config.Validate().ok()) return;
  config_ = std::move(config);
  for (const QueueSpec& q : config_.queues) nodes_[q.name].spec = &q;
  for (const QueueSpec& q : config_.queues) {
    if (!q.parent.empty()) nodes_[q.parent].children.push_back(q.name);
    for (const PoolQuota& p : q.quotas) managed_.insert(p.pool);
  }
}

const QueueSpec* QueueLedger::Find(std::string_view queue) const {
  auto it = nodes_.find(queue);
  return it == nodes_.end() ? nullptr : it->second.spec;
}

bool QueueLedger::IsLeaf(std::string_view queue) const {
  auto it = nodes_.find(queue);
  return it != nodes_.end() && it->second.children.empty();
}

const std::string& QueueLedger::Resolve(std::string_view queue) const {
  auto it = nodes_.find(queue);
  if (it != nodes_.end() && it->second.children.empty()) return it->first;
  return config_.default_queue;
}

void QueueLedger::SetCapacity(std::string_view pool, Milli capacity) {
  auto it = capacity_.find(pool);
  if (it == capacity_.end()) {
    capacity_.emplace(std::string(pool), capacity);
  } else {
    it->second = capacity;
  }
}

void QueueLedger::Add(const GangKey& key, const std::string& queue, const std::string& pool, Milli amount,
                      int priority, double started) {
  Remove(key);
  gangs_.emplace(key, Gang{queue, pool, amount, priority, started, next_seq_++});
  usage_[{queue, pool}] += amount;
  members_[{queue, pool}].insert(key);
  if (const QueueSpec* s = Find(queue); s && !s->parent.empty()) usage_[{s->parent, pool}] += amount;
}

void QueueLedger::Remove(const GangKey& key) {
  auto it = gangs_.find(key);
  if (it == gangs_.end()) return;
  const Gang& g = it->second;
  usage_[{g.queue, g.pool}] -= g.amount;
  members_[{g.queue, g.pool}].erase(key);
  if (const QueueSpec* s = Find(g.queue); s && !s->parent.empty()) usage_[{s->parent, g.pool}] -= g.amount;
  gangs_.erase(it);
}

Milli QueueLedger::Used(std::string_view queue, std::string_view pool) const {
  auto it = usage_.find({std::string(queue), std::string(pool)});
  return it == usage_.end() ? 0 : it->second;
}

Milli QueueLedger::Usage(std::string_view queue, std::string_view pool) const { return Used(queue, pool); }

Milli QueueLedger::Nominal(std::string_view queue, std::string_view pool) const {
  const QueueSpec* s = Find(queue);
  const PoolQuota* q = s ? s->QuotaOf(pool) : nullptr;
  return q ? q->nominal : 0;
}

Milli QueueLedger::Lendable(std::string_view queue, std::string_view pool) const {
  const QueueSpec* s = Find(queue);
  const PoolQuota* q = s ? s->QuotaOf(pool) : nullptr;
  if (q == nullptr) return 0;
  return q->lending_limit ? std::min(q->nominal, *q->lending_limit) : q->nominal;
}

Milli QueueLedger::Guaranteed(std::string_view queue, std::string_view pool) const {
  return Nominal(queue, pool) - Lendable(queue, pool);
}

std::vector<std::string> QueueLedger::GroupOf(std::string_view queue) const {
  const QueueSpec* s = Find(queue);
  if (s == nullptr) return {};
  if (!s->parent.empty()) return nodes_.at(s->parent).children;
  if (s->cohort.empty()) return {s->name};
  std::vector<std::string> group;
  for (const QueueSpec& q : config_.queues)
    if (q.parent.empty() && q.cohort == s->cohort) group.push_back(q.name);
  return group;
}

Milli QueueLedger::SharedUsed(std::string_view queue, std::string_view pool) const {
  Milli used = 0;
  for (const std::string& m : GroupOf(queue)) used += std::max<Milli>(0, Used(m, pool) - Guaranteed(m, pool));
  return used;
}

Milli QueueLedger::SharedCapacity(std::string_view queue, std::string_view pool) const {
  const QueueSpec* s = Find(queue);
  if (s == nullptr) return 0;
  if (s->parent.empty()) {
    Milli cap = 0;
    for (const std::string& m : GroupOf(queue)) cap += Lendable(m, pool);
    return cap;
  }
  // Siblings share what their parent holds or may still take.
  Milli guaranteed = 0;
  for (const std::string& m : GroupOf(queue)) guaranteed += Guaranteed(m, pool);
  const Milli parent_room = Room(s->parent, pool);
  return std::max<Milli>(0, Used(s->parent, pool) + std::min(parent_room, kUnlimited) - guaranteed);
}

Milli QueueLedger::Room(std::string_view queue, std::string_view pool) const {
  const QueueSpec* s = Find(queue);
  if (s == nullptr) return 0;
  const PoolQuota* quota = s->QuotaOf(pool);
  const Milli nominal = quota ? quota->nominal : 0;
  const Milli used = Used(queue, pool);
  const Milli within = nominal - used;
  if (s->parent.empty() && s->cohort.empty()) return std::max<Milli>(0, within);
  const Milli limit = quota && quota->borrowing_limit ? nominal + *quota->borrowing_limit - used : kUnlimited;
  const Milli borrow = std::max<Milli>(0, Guaranteed(queue, pool) - used) + SharedCapacity(queue, pool) -
                       SharedUsed(queue, pool);
  return std::max<Milli>(0, std::max(within, std::min(limit, borrow)));
}

QueueLedger::Fit QueueLedger::Check(std::string_view queue, std::string_view pool, Milli amount) const {
  const QueueSpec* s = Find(queue);
  if (s == nullptr) return Fit::kNoRoom;
  if (!Manages(pool)) return Fit::kWithinNominal;  // not limited by queues
  if (Used(queue, pool) + amount <= Nominal(queue, pool)) return Fit::kWithinNominal;
  return amount <= Room(queue, pool) ? Fit::kBorrowing : Fit::kNoRoom;
}

std::string QueueLedger::Explain(std::string_view queue, std::string_view pool, Milli amount) const {
  const QueueSpec* s = Find(queue);
  if (s == nullptr) return fmt::format("queue {} is not configured", queue);
  const Milli used = Used(queue, pool), nominal = Nominal(queue, pool);
  const std::string head = fmt::format("queue {} is at {}/{} nominal GPUs of {}", queue, Gpus(used), Gpus(nominal), pool);
  const PoolQuota* quota = s->QuotaOf(pool);
  if (quota && quota->borrowing_limit && used + amount > nominal + *quota->borrowing_limit) {
    return fmt::format("{} and may borrow at most {} beyond it; this gang needs {}", head,
                       Gpus(*quota->borrowing_limit), Gpus(amount));
  }
  if (s->parent.empty() && s->cohort.empty()) return head + " and has no cohort to borrow from";
  const std::string group = s->parent.empty() ? "its cohort " + s->cohort : "its parent " + s->parent;
  const Milli room = Room(queue, pool);
  if (room <= std::max<Milli>(0, nominal - used)) return fmt::format("{} and {} has none to lend", head, group);
  return fmt::format("{} and {} has {} to lend; this gang needs {}", head, group, Gpus(room - std::max<Milli>(0, nominal - used)),
                     Gpus(amount));
}

QueuePoolUsage QueueLedger::UsageOf(std::string_view queue, std::string_view pool) const {
  QueuePoolUsage u;
  u.pool = std::string(pool);
  u.nominal = Nominal(queue, pool);
  u.usage = Used(queue, pool);
  u.borrowed = std::max<Milli>(0, u.usage - u.nominal);
  // What the group borrows is spread over its lenders by their unused lendable quota.
  const Milli unused = std::min(Lendable(queue, pool), std::max<Milli>(0, u.nominal - u.usage));
  if (unused > 0) {
    Milli borrowed = 0, lendable = 0;
    for (const std::string& m : GroupOf(queue)) {
      borrowed += std::max<Milli>(0, Used(m, pool) - Nominal(m, pool));
      lendable += std::min(Lendable(m, pool), std::max<Milli>(0, Nominal(m, pool) - Used(m, pool)));
    }
    if (lendable > 0) u.lent = std::min(unused, borrowed * unused / lendable);
  }
  return u;
}

std::vector<std::string> QueueLedger::Pools() const {
  std::set<std::string> pools;
  for (const QueueSpec& q : config_.queues)
    for (const PoolQuota& p : q.quotas) pools.insert(p.pool);
  for (const auto& [qp, used] : usage_)
    if (used > 0) pools.insert(qp.second);
  return {pools.begin(), pools.end()};
}

bool QueueLedger::WithinNominal(std::string_view queue, std::string_view pool, Milli amount) const {
  if (!pool.empty()) return Check(queue, pool, amount) == Fit::kWithinNominal;
  const QueueSpec* s = Find(queue);
  if (s == nullptr) return false;
  for (const PoolQuota& q : s->quotas)
    if (Used(queue, q.pool) + amount <= q.nominal) return true;
  return false;
}

double QueueLedger::Share(std::string_view queue) const {
  const QueueSpec* s = Find(queue);
  if (s == nullptr) return 0;
  double share = 0;
  const std::string name(queue);
  for (auto it = usage_.lower_bound({name, ""}); it != usage_.end() && it->first.first == name; ++it) {
    const auto& [qp, used] = *it;
    if (used <= 0) continue;
    auto cap = capacity_.find(qp.second);
    Milli capacity = cap == capacity_.end() ? 0 : cap->second;
    if (capacity <= 0) {
      for (const QueueSpec& q : config_.queues)
        if (q.parent.empty()) capacity += q.QuotaOf(qp.second) ? q.QuotaOf(qp.second)->nominal : 0;
    }
    share = std::max(share, static_cast<double>(used) / static_cast<double>(std::max<Milli>(capacity, kMilliGpu)));
  }
  return share / s->weight;
}

bool QueueLedger::BelowNominal(std::string_view queue, std::string_view pool) const {
  const QueueSpec* s = Find(queue);
  if (s == nullptr) return false;
  if (!pool.empty()) return Used(queue, pool) < Nominal(queue, pool);
  for (const PoolQuota& q : s->quotas)
    if (Used(queue, q.pool) < q.nominal) return true;
  return false;
}

std::vector<GangKey> QueueLedger::Borrowing(std::string_view queue, std::string_view pool) const {
  std::vector<GangKey> out;
  for (const auto& [qp, keys] : members_) {
    if ((!queue.empty() && qp.first != queue) || (!pool.empty() && qp.second != pool) || keys.empty()) continue;
    Milli remaining = Used(qp.first, qp.second);
    const Milli nominal = Nominal(qp.first, qp.second);
    if (remaining <= nominal) continue;
    // Lowest priority, latest start (then latest added) first.
    std::vector<std::tuple<int, double, int64_t, GangKey>> order;
    for (const GangKey& k : keys) {
      const Gang& g = gangs_.at(k);
      order.emplace_back(g.priority, -g.started, -static_cast<int64_t>(g.seq), k);
    }
    std::sort(order.begin(), order.end());
    for (const auto& [priority, neg_started, neg_seq, k] : order) {
      if (remaining <= nominal) break;
      out.push_back(k);
      remaining -= gangs_.at(k).amount;
    }
  }
  return out;
}

bool QueueLedger::IsBorrowing(const GangKey& key) const {
  auto it = gangs_.find(key);
  if (it == gangs_.end()) return false;
  for (const GangKey& k : Borrowing(it->second.queue, it->second.pool))
    if (k == key) return true;
  return false;
}

bool QueueLedger::SameGroup(std::string_view a, std::string_view b) const {
  const QueueSpec* sa = Find(a);
  const QueueSpec* sb = Find(b);
  if (sa == nullptr || sb == nullptr) return false;
  if (a == b) return true;
  const QueueSpec* ta = sa->parent.empty() ? sa : Find(sa->parent);
  const QueueSpec* tb = sb->parent.empty() ? sb : Find(sb->parent);
  if (ta == tb) return true;  // siblings
  return !ta->cohort.empty() && ta->cohort == tb->cohort;
}

std::vector<GangKey> QueueLedger::ReclaimCandidates(std::string_view queue, std::string_view pool) const {
  std::vector<GangKey> out;
  for (const GangKey& k : Borrowing("", pool)) {
    const Gang& g = gangs_.at(k);
    if (g.queue != queue && SameGroup(queue, g.queue)) out.push_back(k);
  }
  return out;
}

}  // namespace phalanx::scheduling
