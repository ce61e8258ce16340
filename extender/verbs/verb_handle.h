// What the verbs see of the extender, the way a kube-scheduler plugin sees its framework handle:
// the shared state they read and change (VerbHandle), the API writes they queue (WriteHandle),
// and the few answers that belong to admission and the team queues (AdmissionHandle). The
// Extender owns all of it and wires each verb with only the parts it uses; a verb owns only its
// own state (BindVerb: the bind barriers).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/base/clock.h"
#include "core/scheduling/engine.h"
#include "extender/config.h"
#include "extender/mig/mig_filter.h"
#include "extender/state/ledger.h"
#include "extender/writes/cluster_writer.h"
#include "extender/writes/write_pool.h"

namespace phalanx::extender {

using BindCallback = std::function<void(std::string error)>;  // "" = bound

class Leadership {
 public:
  virtual ~Leadership() = default;
  virtual bool IsLeader() const = 0;
};

// Counters the daemon exports (read by the metrics layer; updated lock-free).
struct ExtenderStats {
  std::atomic<uint64_t> gangs_admitted{0};
  std::atomic<uint64_t> gangs_bound{0};
  std::atomic<uint64_t> barrier_timeouts{0};
  std::atomic<uint64_t> plans_expired{0};
  // Admissions the engine made but the commit did not apply: the ledger changed between
  // planning and commit (GPUs taken, members changed); the gang kept waiting.
  std::atomic<uint64_t> admission_conflicts{0};
  std::atomic<uint64_t> preempt_accepted{0};
  std::atomic<uint64_t> preempt_vetoed{0};
  std::atomic<uint64_t> evictions{0};
  std::atomic<uint64_t> write_errors{0};
  // Ungated gang members touched (phalanx.io/requeued-at) so kube-scheduler retries them once
  // their gang can be placed (gang_requeue.cc).
  std::atomic<uint64_t> ungated_requeues{0};
};

// Pods seen only in filter requests (embedded mode, or before the informer: bind needs their
// request) and each pod's last filter summary (`phalanx explain`). Bounded. Thread-safe: its
// own lock, a leaf (taken under the ledger lock, never the other way round).
class RequestMemory {
 public:
  void RememberPod(const PodInfo& pod);
  std::optional<PodInfo> SeenPod(const PodUid& uid) const;
  void RecordFilterSummary(const std::string& ns_name, std::string text);
  std::string FilterSummary(std::string_view ns_name) const;  // "" = none

 private:
  mutable std::mutex mu_;
  std::unordered_map<PodUid, PodInfo> seen_pods_;
  std::unordered_map<std::string, std::string> filter_summaries_;  // ns/name -> words
};

// The extender's shared state as every verb sees it. `mu` guards `ledger` (shared for reads,
// exclusive for changes) and whatever a verb says it guards; API writes never run under it.
struct VerbHandle {
  const ExtenderConfig& config;
  Clock& clock;
  const Leadership& leadership;
  ExtenderStats& stats;
  std::shared_mutex& mu;
  Ledger& ledger;
  RequestMemory& memory;
};

// Where a verb's API writes go: queued on the write pool, after `mu` is released.
struct WriteHandle {
  ClusterWriter& writer;
  WritePool& io;
};

// The answers admission and the team queues give the verbs (the Extender implements it; the
// code is in admission/ and queues/, mig/mig_queues.cc). Lock requirements as written.
class AdmissionHandle {
 public:
  virtual ~AdmissionHandle() = default;
  // Plans and reserves an ungated gang at filter; "" on success, else why not (also kept in
  // last_no_fit); *over_quota set when its team queue's quota refused it. mu held exclusively.
  virtual std::string TryPlan(GangRecord& g, MonotonicTime now, bool* over_quota) = 0;
  // Whether the engine has team queues (read without a lock: filter takes the exclusive lock
  // for a MIG pod's quota check only then).
  virtual bool QueuesOn() const = 0;
  // Why a MIG pod's queue has no room, per pool. mu held exclusively.
  virtual PoolRefusals MigQuotaRefusals(const PodInfo& pod) = 0;
  // The commit point at bind: why `pod` may not take its MIG devices on `node` ("" = it may),
  // and counting it once it does. mu held exclusively.
  virtual std::string MigQuotaRefusalAt(const PodInfo& pod, const NodeName& node) = 0;
  virtual void RecordUncountedMig(const PodInfo& pod, const NodeName& node) = 0;
  // A gang as the scheduling engine sees it (its queue resolved). The admission lock and mu held.
  virtual scheduling::GangRequest EngineRequestOf(const GangRecord& g, int members) const = 0;
};

}  // namespace phalanx::extender
