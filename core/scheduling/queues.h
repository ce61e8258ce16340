// GPU queues for teams (docs/user-guide.md §7 "Queues and quotas"): whose GPUs they are. A queue holds, per
// GPU pool (a phalanx.io/gpu.product value), a nominal quota, a borrowing limit and a
// lending limit, all in milli-GPUs (a MIG device or a GPU share counts as the fraction of
// a GPU it is); a cohort whose queues lend each other unused nominal quota; a fair-share
// weight; and optionally a parent (one level of hierarchy: the parent's quota bounds its
// children, whose nominal quotas must fit in it).
//
// QueueLedger is the accounting: running gangs by queue and pool, what each queue borrows
// and lends, its weighted dominant-resource share, whether a gang may run now within its
// queue's nominal quota or by borrowing, and which running gangs are borrowing (reclaim
// candidates). Pure logic: the engine (and later the extender) feeds it; no clock, no I/O.
//
// Rules (Kueue's, one level deeper where a queue has a parent):
//   guaranteed(q) = nominal(q) - lendable(q), lendable(q) = min(nominal, lendingLimit)
//   A gang of x milli-GPUs runs *within nominal* when usage(q) + x <= nominal(q); such
//   work is never preempted for another queue (except by the critical tier, a policy).
//   Beyond nominal it *borrows*, allowed when usage(q) + x <= nominal + borrowingLimit
//   and the group's shared capacity still covers what its members use beyond their
//   guaranteed parts:  sum_m max(0, usage(m) - guaranteed(m)) <= shared capacity,
//   where the group of a top-level queue is its cohort (shared capacity = the members'
//   lendable quota) and the group of a child is its siblings (shared capacity = what the
//   parent holds or may still take, minus the children's guaranteed parts).
//   Lendable quota a member's own waiting work covers (SetPending, from the engine at the
//   start of each pass) is left out of the shared capacity the others may borrow.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "core/base/ids.h"
#include "core/base/result.h"
#include "core/base/status.h"

namespace phalanx::scheduling {

using Milli = int64_t;  // milli-GPUs (1000 = one whole GPU)
inline constexpr Milli kMilliGpu = 1000;

struct PoolQuota {
  std::string pool;                  // phalanx.io/gpu.product
  Milli nominal = 0;
  std::optional<Milli> borrowing_limit;  // beyond nominal; nullopt = no limit
  std::optional<Milli> lending_limit;    // of nominal; nullopt = all unused nominal
};

struct QueueSpec {
  std::string name;
  std::string cohort;  // "" = lends and borrows nothing (a child: its siblings are its group)
  double weight = 1;   // fair-share weight
  std::string parent;  // "" = top level
  std::vector<PoolQuota> quotas;
  const PoolQuota* QuotaOf(std::string_view pool) const;
};

struct QueueConfig {
  std::vector<QueueSpec> queues;
  // Work that names no queue (or one not configured) runs in this queue. Required when
  // `queues` is not empty; it must be one of them.
  std::string default_queue;
  // Gangs of at least this priority may preempt another queue's work within its nominal
  // quota by the tier rules (the critical tier by default); below it, tier preemption
  // across queues takes only borrowed capacity. Negative: never.
  int cross_queue_preemption_priority = 1000000;
  // A gang within its queue's nominal quota takes lent GPUs back only once it waited this
  // long, or at once if running gangs are not expected to free its GPUs within this
  // time (each reclaim is a preemption; a short wait lets natural ends serve it).
  double reclaim_after_s = 0;
  bool enabled() const { return !queues.empty(); }
  // InvalidArgument naming the field ("queues[2].quotas[0].nominal: must be >= 0").
  Status Validate() const;
};

// `node` is the list under `queues:` (and its siblings `defaultQueue`,
// `crossQueuePreemptionPriority` are read by ParseQueueConfigFrom). Strict: unknown keys,
// wrong types and out-of-range values are errors naming the field; quantities are GPUs
// (integers or decimals, "0.5"), stored as milli-GPUs.
Result<std::vector<QueueSpec>> ParseQueueList(const YAML::Node& node, std::string_view where = "queues");
// A mapping holding `queues:`, `defaultQueue:` and optionally `crossQueuePreemptionPriority:`
// (other keys are the caller's to check).
Result<QueueConfig> ParseQueueConfigFrom(const YAML::Node& mapping, std::string_view where = "");
// The keys ParseQueueConfigFrom reads: queues, defaultQueue, crossQueuePreemptionPriority,
// reclaimAfterSeconds.
const std::vector<std::string>& QueueConfigKeys();

// Milli-GPUs of one device of a MIG profile ("3g.40gb" -> 3/7 of a GPU = 428); 0 if the
// profile is not "<n>g.<mem>".
Milli MigProfileMilli(std::string_view profile);

// One queue's view at a moment, per pool (status, explain, reports).
struct QueuePoolUsage {
  std::string pool;
  Milli nominal = 0;
  Milli usage = 0;
  Milli borrowed = 0;  // usage beyond nominal
  Milli lent = 0;      // unused nominal others in its group are using
};

class QueueLedger {
 public:
  QueueLedger() = default;
  // `config` must validate (the caller reports errors); an invalid one leaves queues off.
  explicit QueueLedger(QueueConfig config);

  bool enabled() const { return config_.enabled(); }
  const QueueConfig& config() const { return config_; }
  // The queue work naming `queue` runs in ("" or unknown -> the default queue; a parent
  // queue takes no work directly: its name maps to the default queue as well).
  const std::string& Resolve(std::string_view queue) const;
  bool IsLeaf(std::string_view queue) const;
  const QueueSpec* Find(std::string_view queue) const;

  // Capacity of each pool (milli-GPUs in the cluster): the denominator of shares.
  void SetCapacity(std::string_view pool, Milli capacity);
  // What each queue has waiting, per pool (the engine, at the start of a pass): a queue's
  // unused nominal quota covered by its own waiting work is not lent out meanwhile.
  // `pending` maps (queue, pool) -> milli-GPUs; queues and pools not named have none.
  void SetPending(const std::map<std::pair<std::string, std::string>, Milli>& pending);

  // --- running work -----------------------------------------------------------------
  // `queue` as resolved; `started` orders reclaim (the latest borrower goes first).
  void Add(const GangKey& key, const std::string& queue, const std::string& pool, Milli amount, int priority,
           double started);
  void Remove(const GangKey& key);
  bool Tracks(const GangKey& key) const { return gangs_.contains(key); }
  // Bumped by every Add and Remove (callers cache what they derived from usage).
  uint64_t version() const { return version_; }

  Milli Usage(std::string_view queue, std::string_view pool) const;
  Milli Nominal(std::string_view queue, std::string_view pool) const;
  QueuePoolUsage UsageOf(std::string_view queue, std::string_view pool) const;
  // Pools any queue has a quota in or uses (sorted).
  std::vector<std::string> Pools() const;

  // --- admission rules ----------------------------------------------------------------
  enum class Fit { kWithinNominal, kBorrowing, kNoRoom };
  // May `amount` more run in `queue` on `pool` now?
  Fit Check(std::string_view queue, std::string_view pool, Milli amount) const;
  // Pools some queue has a quota in; work on other pools is not limited by queues.
  bool Manages(std::string_view pool) const;
  // `amount` more runs within `queue`'s nominal quota of `pool` ("" = of some pool it
  // has a quota in).
  bool WithinNominal(std::string_view queue, std::string_view pool, Milli amount) const;
  // How much more `queue` may run on `pool` now (within nominal or by borrowing).
  Milli Room(std::string_view queue, std::string_view pool) const;
  // Why Check said kNoRoom: "queue team-a is at 512/512 nominal GPUs of H100 and its
  // cohort has none to lend".
  std::string Explain(std::string_view queue, std::string_view pool, Milli amount) const;
  // What Explain says of `queue` on `pool`, kept to be formatted later for any amount
  // (the engine formats the reasons of gangs it skipped when they are asked for).
  struct Explanation {
    bool configured = true;
    std::string queue, pool;
    Milli used = 0, nominal = 0, room = 0;
    std::optional<Milli> borrowing_limit;
    std::string group;  // "its cohort X" / "its parent Y"; "" = none to borrow from
    std::string Text(Milli amount) const;  // = Explain(queue, pool, amount) when taken
  };
  Explanation Explaining(std::string_view queue, std::string_view pool) const;

  // Weighted dominant-resource share: max over pools of usage / capacity, divided by the
  // queue's weight (a child: its own usage and weight).
  double Share(std::string_view queue) const;
  // True if `queue` uses less than its nominal quota of `pool` ("" = of any pool).
  bool BelowNominal(std::string_view queue, std::string_view pool) const;

  // Running gangs of `queue` on `pool` that run beyond its nominal quota: walking its
  // gangs from the latest started (lowest priority first), those whose removal still
  // leaves the queue at or above nominal are borrowing. Any queue and pool when empty.
  std::vector<GangKey> Borrowing(std::string_view queue = "", std::string_view pool = "") const;
  bool IsBorrowing(const GangKey& key) const;
  // Borrowing gangs whose eviction would return GPUs to `queue`'s group on `pool`: those
  // of other queues that share a cohort or parent with it.
  std::vector<GangKey> ReclaimCandidates(std::string_view queue, std::string_view pool) const;
  // Two queues share capacity (same cohort, same parent, or parents in one cohort).
  bool SameGroup(std::string_view a, std::string_view b) const;

  // --- by index (the engine's per-gang path: names are looked up once, not per check) ---
  // A configured queue's index (config order) or a pool's (as first seen); -1 if none.
  // Indexes stay valid for the ledger's life: pools are only ever added.
  int QueueIndex(std::string_view queue) const;
  int PoolIndex(std::string_view pool) const;
  // Index of Resolve(queue) (-1 only when queues are off).
  int ResolveIndex(std::string_view queue) const;
  const std::string& QueueName(int queue) const;
  // As the overloads by name; `pool` -1 is a pool the ledger does not know (not managed).
  Fit Check(int queue, int pool, Milli amount) const;
  Milli Nominal(int queue, int pool) const;
  double Share(int queue) const;
  // WithinNominal(queue, "", amount): within its nominal quota of some pool it has one in.
  bool WithinNominalOfAnyPool(int queue, Milli amount) const;
  // SetPending by index: (queue, pool, milli-GPUs), each (queue, pool) at most once.
  void SetPendingByIndex(const std::vector<std::tuple<int, int, Milli>>& pending);
  // ReclaimCandidates by index; kept until the next Add or Remove.
  const std::vector<GangKey>& ReclaimCandidates(int queue, int pool) const;

 private:
  // Indexes: queues by config order, pools as first seen; group = the queues that share
  // capacity (a cohort's top-level queues, a parent's children, or a lone queue).
  struct Queue {
    const QueueSpec* spec = nullptr;
    int parent = -1;
    int group = -1;
    std::vector<int> children;
    std::vector<int> quota_pools;  // pool index of each of spec->quotas (the per-gang checks)
  };
  struct Pool {
    std::string name;
    bool managed = false;  // some queue has a quota in it
    Milli capacity = 0;
    std::vector<Milli> nominal, lendable, used;  // by queue (a parent: its children's sum)
    std::vector<Milli> group_lendable, group_guaranteed, group_shared_used;  // by group
    std::vector<Milli> held;        // by queue: unused lendable quota its waiting work covers
    std::vector<Milli> group_held;  // by group
  };
  struct Gang {
    int queue = -1, pool = -1;
    Milli amount = 0;
    int priority = 0;
    double started = 0;
    uint64_t seq = 0;  // order of Add (ties of `started`: the later one borrows)
  };
  int IdOf(std::string_view queue) const;
  int PoolIdOf(std::string_view pool) const;
  int EnsurePool(const std::string& pool);
  void ChangeUsage(int q, int p, Milli delta);
  Milli Guaranteed(int q, int p) const { return pools_[p].nominal[q] - pools_[p].lendable[q]; }
  Milli RoomOf(int q, int p) const;
  Milli SharedCapacity(int q, int p) const;
  std::vector<GangKey> BorrowingOf(int q, int p) const;

  QueueConfig config_;
  std::vector<Queue> queues_;
  // Names -> indexes, looked up by string_view on every check.
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, int, NameHash, std::equal_to<>> ids_;
  std::vector<std::vector<int>> groups_;
  std::vector<Pool> pools_;
  std::unordered_map<std::string, int, NameHash, std::equal_to<>> pool_ids_;
  std::unordered_map<GangKey, Gang> gangs_;
  std::map<std::pair<int, int>, std::set<GangKey>> members_;  // (queue, pool) -> running gangs
  uint64_t next_seq_ = 0;
  uint64_t version_ = 0;
  // Borrowing() over every queue and pool, kept until the next Add or Remove.
  mutable std::optional<std::vector<GangKey>> all_borrowing_;
  // ReclaimCandidates by (queue, pool), kept until the next Add or Remove.
  mutable std::map<std::pair<int, int>, std::vector<GangKey>> reclaim_candidates_;
  bool SameGroup(int a, int b) const;
};

}  // namespace phalanx::scheduling
