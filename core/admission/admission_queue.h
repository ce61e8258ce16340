// AdmissionQueue: the order in which waiting gangs are admitted (DESIGN §2.5, §3 step 2).
//
// Per capacity pool, one gang at a time: the caller asks NextToTry, plans that gang
// (gang_plan.h), and reports RecordAttempt. Order = priority (highest first), then
// arrival (Enqueue order, FIFO). A gang that does not fit reserves nothing but, while
// it is the pool's *head*, holds back every gang behind it for at most
// `head_of_line` (default 300 s) from its first failed attempt; then its hold is spent:
// it is still tried (first, as it is still first in order) but no longer blocks the
// gangs behind it, and the next gang in order that fails becomes the holding head.
// "Behind" means later in the order: lower priority, or same priority and later arrival.
// Non-gang entries (gang == false, a single pod the caller routes through the queue)
// are never held back: they may use GPUs that no plan reserves.
// A gang that arrives ahead of the holding head (higher priority) is tried first.
//
// Typical loop, per pool:
//   std::optional<GangKey> after;
//   while (auto next = queue.NextToTry(pool, now, after)) {
//     bool fitted = TryAdmit(*next);       // plan + reserve
//     queue.RecordAttempt(*next, fitted, now);
//     if (fitted) break;                   // one admission per pass; re-run later
//     after = *next;
//   }
//
// Pure state machine: `now` is passed in, nothing reads a clock. Not thread-safe; owned
// by the admission loop (extender) or the event loop (simulator).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "core/base/clock.h"
#include "core/base/ids.h"
#include "core/base/status.h"

namespace phalanx::admission {

struct AdmissionConfig {
  // How long a gang that does not fit may hold its pool's head against later gangs.
  Duration head_of_line = std::chrono::seconds(300);
};

struct WaitingGang {
  GangKey key;
  std::string pool;  // capacity pool ("" = nodes without the product label)
  int priority = 0;
  bool gang = true;  // false: a single non-gang pod, never held back
};

enum class EntryState {
  kWaiting,  // never failed as head
  kHolding,  // failed as head; holds later gangs until hold_since + head_of_line
  kSpent,    // hold expired: tried in order but blocks nobody
};

struct QueuedGang {
  WaitingGang gang;
  uint64_t sequence = 0;  // arrival order
  MonotonicTime enqueued{};
  std::optional<MonotonicTime> hold_since;
  std::optional<MonotonicTime> last_attempt;
  int attempts = 0;
  bool hold_spent = false;  // sticky once the hold ran out
};

class AdmissionQueue {
 public:
  explicit AdmissionQueue(AdmissionConfig config = {});

  // AlreadyExists if the key is queued (a re-queued attempt has a new key,
  // `<job>-a<attempt>`). InvalidArgument for an empty key.
  Status Enqueue(WaitingGang gang, MonotonicTime now);
  // NotFound if not queued.
  Status Remove(const GangKey& key);
  // Updates priority (keeps the arrival sequence). NotFound if not queued.
  Status UpdatePriority(const GangKey& key, int priority);

  // The next entry of `pool` to try after `after` (the previous one tried in this pass;
  // nullopt = from the start), or nullopt when the pass is over: the pool is empty, the
  // order is exhausted, or only gangs behind a holding head remain (they wait).
  // Non-gang entries behind a holding head are still returned. An `after` that is no
  // longer queued ends the pass (nullopt).
  std::optional<GangKey> NextToTry(const std::string& pool, MonotonicTime now,
                                   const std::optional<GangKey>& after = std::nullopt) const;

  // fitted: the gang is admitted and leaves the queue. Not fitted: if it is the pool's
  // head (first gang in order whose hold is not spent) and holds nothing yet, its hold
  // starts now; a head whose hold has run out is marked spent. NotFound if not queued.
  Status RecordAttempt(const GangKey& key, bool fitted, MonotonicTime now);

  // Introspection (explain, metrics, tests).
  const QueuedGang* Find(const GangKey& key) const;
  EntryState StateOf(const QueuedGang& entry, MonotonicTime now) const;
  // Entries of the pool in admission order.
  std::vector<const QueuedGang*> Ordered(const std::string& pool) const;
  // The pool's holding head, if a hold is active at `now`.
  std::optional<GangKey> HoldingHead(const std::string& pool, MonotonicTime now) const;
  size_t size() const { return entries_.size(); }

 private:
  // Sort key: priority descending, then arrival ascending.
  using OrderKey = std::tuple<int, uint64_t>;
  static OrderKey KeyOf(const QueuedGang& entry) { return {-entry.gang.priority, entry.sequence}; }
  const QueuedGang* Head(const std::string& pool, MonotonicTime now) const;

  AdmissionConfig config_;
  uint64_t next_sequence_ = 1;
  std::unordered_map<GangKey, QueuedGang> entries_;
  std::unordered_map<std::string, std::map<OrderKey, GangKey>> pools_;
};

}  // namespace phalanx::admission
