// Team-queue quota for the work the scheduling engine does not admit itself (docs/user-guide.md
// §7): gangs planned at filter (ungated: no webhook, or created while it was away) and pods on
// MIG devices. Which queue a gang or pod runs in; what holds GPUs the engine's queue ledger does
// not count yet (`uncounted`: until the next pass adopts or books it); the quota check filter
// and bind apply to such work; MIG holders booked in the engine (Engine::BookOutside) at each
// pass. The Extender owns it with the engine and the Ledger (extender.h has the locking rule:
// the queues change only under the admission lock and the ledger lock; filter reads them under
// the ledger lock held exclusively).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "core/base/clock.h"
#include "core/base/status.h"
#include "core/scheduling/engine.h"
#include "extender/mig/mig_filter.h"
#include "extender/queues/queue_sync.h"
#include "extender/state/ledger.h"

namespace phalanx::extender {

class QueueQuotas {
 public:
  QueueQuotas(scheduling::Engine& engine, Ledger& ledger) : engine_(engine), ledger_(ledger) {}
  QueueQuotas(const QueueQuotas&) = delete;
  QueueQuotas& operator=(const QueueQuotas&) = delete;

  // --- the queues (queue_quotas.cc) ---------------------------------------------------------
  const QueueAssignment& assignment() const { return queues_; }
  // Gives the engine the team queues of `queues`; InvalidArgument naming the field, and
  // nothing changes, if they do not validate. MIG pods are booked again at the next pass
  // (their namespace's queue may have changed). Admission lock and ledger lock held.
  Status Set(QueueAssignment queues);
  // Whether the engine has team queues (lock-free: filter takes the exclusive ledger lock for
  // a MIG pod's quota check only then).
  bool On() const { return queues_on_.load(); }
  // The team queue a gang runs in: its first member's phalanx.io/queue label, else the queue
  // selecting its namespace, else "" (the default queue). The same rule for one pod.
  std::string QueueOf(const GangRecord& g) const;
  std::string QueueOfPod(const PodInfo& pod) const;

  // --- work the engine does not count yet (ledger lock held exclusively) ----------------------
  bool HoldsGpus(const GangRecord& g) const;  // some member holds GPUs
  // Remembers a gang that now holds GPUs the engine does not count yet.
  void RecordUncounted(const GangRecord& g, const std::string& pool, int members);
  // Why `members` of `g` on `pool` do not fit in its team queue now ("" = they do): the
  // engine's queue ledger plus the uncounted work.
  std::string QuotaRefusal(const GangRecord& g, const std::string& pool, int members);

  // --- MIG pods (mig/mig_queues.cc) -----------------------------------------------------------
  // Why `pod`'s queue has no room for its MIG devices, per pool a queue has a quota in (a pool
  // not named: room, or not limited). Empty without queues. Ledger lock held exclusively.
  PoolRefusals MigQuotaRefusals(const PodInfo& pod);
  // The commit point at bind: why `pod` may not take its MIG devices on `node` ("" = it may; a
  // pod counted already may). Ledger lock held exclusively.
  std::string MigQuotaRefusalAt(const PodInfo& pod, const NodeName& node);
  // Counts a MIG pod just bound on `node` until the next pass books it. Ledger lock held
  // exclusively.
  void RecordUncountedMig(const PodInfo& pod, const NodeName& node);
  // The pass: books every pod holding MIG devices in the engine's queue ledger, unbooks those
  // gone. True if a booking was dropped (quota freed). Admission lock and ledger lock (shared)
  // held.
  bool BookMigHolders(MonotonicTime now);

 private:
  // Drops what the engine counts now and gangs that hold nothing.
  void PruneUncounted();
  // QuotaRefusal's core: why `amount` more of `key` in the queue `named` on `pool` does not fit
  // ("" = it does), counting the uncounted work. Queues on, uncounted pruned.
  std::string QuotaRefusalOf(const GangKey& key, const std::string& named, const std::string& pool,
                             scheduling::Milli amount);
  // What the quota check judges of a MIG pod: its booking key and milli-GPUs; nullopt when
  // there is nothing to judge (queues off, no countable MIG request, or the pod is counted
  // already: a retried filter or bind).
  std::optional<std::pair<GangKey, scheduling::Milli>> MigQuotaSubject(const PodInfo& pod);

  scheduling::Engine& engine_;  // the Extender's (its queue ledger counts what the engine runs)
  Ledger& ledger_;
  QueueAssignment queues_;  // from the GpuQueues; changed with the engine's (Set)
  std::atomic<bool> queues_on_{false};
  // Gangs holding GPUs (a plan or bound members) that the engine's queue ledger does not count
  // yet: planned at filter (the next pass adopts them) or committed by a pass whose engine has
  // not recorded them yet; and MIG pods bound since the last booking. Entries go once the
  // engine counts the gang or it holds nothing. Changed only under the ledger lock exclusively.
  struct UncountedUse {
    std::string queue;  // as named (QueueOf); resolved when checked
    std::string pool;
    scheduling::Milli amount = 0;
    int priority = 0;
    PodUid mig_pod;  // a MIG pod (key MigBookingKey): counted while it holds MIG devices
  };
  std::map<GangKey, UncountedUse> uncounted_;
  // MIG pods booked in the engine (BookMigHolders): when first booked (engine seconds).
  // Admission lock held.
  std::map<PodUid, double> mig_booked_;
  uint64_t mig_version_seen_ = ~uint64_t{0};  // Ledger::mig_version at the last booking
};

}  // namespace phalanx::extender
