#include "core/admission/admission_queue.h"

#include <fmt/format.h>

namespace phalanx::admission {

AdmissionQueue::AdmissionQueue(AdmissionConfig config) : config_(config) {}

Status AdmissionQueue::Enqueue(WaitingGang gang, MonotonicTime now) {
  if (gang.key.empty()) return InvalidArgumentError("admission: empty gang key");
  if (entries_.contains(gang.key)) {
    return AlreadyExistsError(fmt::format("admission: gang {} is already queued", gang.key.str()));
  }
  QueuedGang entry;
  entry.sequence = next_sequence_++;
  entry.enqueued = now;
  entry.gang = std::move(gang);
  const GangKey key = entry.gang.key;
  pools_[entry.gang.pool].emplace(KeyOf(entry), key);
  entries_.emplace(key, std::move(entry));
  return OkStatus();
}

Status AdmissionQueue::Remove(const GangKey& key) {
  auto it = entries_.find(key);
  if (it == entries_.end()) return NotFoundError(fmt::format("admission: gang {} is not queued", key.str()));
  auto pool = pools_.find(it->second.gang.pool);
  pool->second.erase(KeyOf(it->second));
  if (pool->second.empty()) pools_.erase(pool);
  entries_.erase(it);
  return OkStatus();
}

Status AdmissionQueue::UpdatePriority(const GangKey& key, int priority) {
  auto it = entries_.find(key);
  if (it == entries_.end()) return NotFoundError(fmt::format("admission: gang {} is not queued", key.str()));
  auto& order = pools_[it->second.gang.pool];
  order.erase(KeyOf(it->second));
  it->second.gang.priority = priority;
  order.emplace(KeyOf(it->second), key);
  return OkStatus();
}

EntryState AdmissionQueue::StateOf(const QueuedGang& e, MonotonicTime now) const {
  if (e.hold_spent || (e.hold_since && now - *e.hold_since >= config_.head_of_line)) return EntryState::kSpent;
  return e.hold_since ? EntryState::kHolding : EntryState::kWaiting;
}

const QueuedGang* AdmissionQueue::Head(const std::string& pool, MonotonicTime now) const {
  auto it = pools_.find(pool);
  if (it == pools_.end()) return nullptr;
  for (const auto& [order, key] : it->second) {
    const QueuedGang& e = entries_.at(key);
    if (e.gang.gang && StateOf(e, now) != EntryState::kSpent) return &e;
  }
  return nullptr;
}

std::optional<GangKey> AdmissionQueue::NextToTry(const std::string& pool, MonotonicTime now,
                                                 const std::optional<GangKey>& after) const {
  auto it = pools_.find(pool);
  if (it == pools_.end()) return std::nullopt;
  if (after && !entries_.contains(*after)) return std::nullopt;
  // Walk the whole order so a holding gang ahead of `after` still blocks what follows.
  bool passed = !after.has_value();
  bool blocked = false;
  for (const auto& [order, key] : it->second) {
    const QueuedGang& e = entries_.at(key);
    if (!passed) {
      if (e.gang.gang && StateOf(e, now) == EntryState::kHolding) blocked = true;
      if (key == *after) passed = true;
      continue;
    }
    if (e.gang.gang && blocked) continue;  // held back; non-gang entries may pass
    return key;
  }
  return std::nullopt;
}

Status AdmissionQueue::RecordAttempt(const GangKey& key, bool fitted, MonotonicTime now) {
  auto it = entries_.find(key);
  if (it == entries_.end()) return NotFoundError(fmt::format("admission: gang {} is not queued", key.str()));
  if (fitted) return Remove(key);
  QueuedGang& e = it->second;
  const QueuedGang* head = Head(e.gang.pool, now);
  ++e.attempts;
  e.last_attempt = now;
  if (e.hold_since && now - *e.hold_since >= config_.head_of_line) {
    e.hold_spent = true;
  } else if (head == &e && !e.hold_since) {
    e.hold_since = now;
  }
  return OkStatus();
}

const QueuedGang* AdmissionQueue::Find(const GangKey& key) const {
  auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : &it->second;
}

std::vector<const QueuedGang*> AdmissionQueue::Ordered(const std::string& pool) const {
  std::vector<const QueuedGang*> out;
  auto it = pools_.find(pool);
  if (it == pools_.end()) return out;
  for (const auto& [order, key] : it->second) out.push_back(&entries_.at(key));
  return out;
}

std::optional<GangKey> AdmissionQueue::HoldingHead(const std::string& pool, MonotonicTime now) const {
  const QueuedGang* head = Head(pool, now);
  if (head && StateOf(*head, now) == EntryState::kHolding) return head->gang.key;
  return std::nullopt;
}

}  // namespace phalanx::admission
