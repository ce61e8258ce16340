// Extender: the scheduling logic of phalanx-extender (docs/architecture.md §2.5, §3, §4), over the
// Ledger, with every API write behind ClusterWriter and time behind Clock. It owns the shared
// state and wires the parts (extender/README.md has the map):
//   verbs/      FilterVerb, PrioritizeVerb, PreemptVerb, BindVerb: kube-scheduler's four verbs,
//               each over a narrow handle (verbs/verb_handle.h) to the state below.
//   admission/  Tick: admission (the scheduling engine of core/scheduling over the ledger:
//               priority then first submission, heads and backfill; docs/algorithms.md §8),
//               barrier timeouts and plan expiry, ungated gangs refused at filter. The daemon
//               calls it every 100 ms; tests call it after advancing a FakeClock. The pass is
//               planned under the shared lock and committed, re-checked, under the exclusive one.
//   queues/, mig/mig_queues.cc  the team queues' quota for what the engine does not admit
//               itself (gangs planned at filter, MIG pods), answered to the verbs through
//               AdmissionHandle.
//   eviction/   Disruptions: budgets, notice requests and evictions, for the preempt verb and
//               the engine's preemption alike.
// Only the leader (Lease phalanx-extender) admits, lifts gates, plans and binds; others
// answer filter/prioritize and fail bind with a retryable error.
//
// Thread-safety: every method is thread-safe. Filter/Prioritize take the ledger lock
// shared; everything that changes the ledger takes it exclusively. Tick, Preempt, Explain
// and StateJson first take the admission lock (the engine's), then the ledger lock. Writes run on the
// WritePool after the lock is released; bind callbacks run on its threads (or inline for
// immediate errors).
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <vector>

#include "core/base/clock.h"
#include "core/scheduling/engine.h"
#include "extender/config.h"
#include "extender/eviction/disruptions.h"
#include "extender/eviction/gang_evictor.h"
#include "extender/eviction/pod_disruption_budgets.h"
#include "extender/mig/mig_filter.h"
#include "extender/queues/queue_sync.h"
#include "extender/state/ledger.h"
#include "extender/verbs/bind_verb.h"
#include "extender/verbs/filter_verb.h"
#include "extender/verbs/preempt_verb.h"
#include "extender/verbs/verb_handle.h"
#include "extender/verbs/wire.h"
#include "extender/writes/cluster_writer.h"
#include "extender/writes/event_sink.h"
#include "extender/writes/write_pool.h"

namespace phalanx::extender {

// Fixed leadership: embedded mode (single replica) and tests.
class StaticLeadership final : public Leadership {
 public:
  explicit StaticLeadership(bool leader = true) : leader_(leader) {}
  bool IsLeader() const override { return leader_.load(); }
  void Set(bool leader) { leader_.store(leader); }

 private:
  std::atomic<bool> leader_;
};

class Extender final : private AdmissionHandle {
 public:
  using BindCallback = extender::BindCallback;  // "" = bound

  // `writers`: threads of the write pool (--writers).
  Extender(ExtenderConfig config, Clock& clock, ClusterWriter& writer, Leadership& leadership, int writers = 4);
  ~Extender() override;
  Extender(const Extender&) = delete;
  Extender& operator=(const Extender&) = delete;

  // --- cluster events ----------------------------------------------------------------
  Status OnNode(const NodeInfo& node);
  void OnNodeDeleted(const NodeName& node);
  void OnPod(const PodInfo& pod);
  void OnPodDeleted(const PodUid& uid);
  void OnTrainingJob(const TrainingJobInfo& job);
  void OnTrainingJobDeleted(const std::string& ns_name);
  // The team queues from the GpuQueue objects (queue_sync.h; an empty config turns queues
  // off). InvalidArgument naming the field, and nothing changes, if they do not validate.
  // Waiting gangs are re-queued with their queue as now resolved; a running gang whose
  // queue changed is counted in its new queue from the next pass.
  Status SetQueues(QueueAssignment queues);
  // Each team queue as the engine counts it now (GpuQueue status, /debug/state, metrics);
  // empty without queues.
  std::vector<QueueStatusInfo> QueueStatuses() const;
  // After the initial list (informers synced or snapshot loaded): completes the binding
  // of committed gang members (devices annotated but unbound), as a restarted extender
  // must; uncommitted plans never survive a restart (they live only in memory). Only the
  // active extender calls it (when it becomes active, before it admits anything).
  void RecoverCommitted();
  // Optional collaborators, set before the verbs are served (not owned; may be null):
  // PodDisruptionBudgets checked before preempting, where Events go, eviction retry timing.
  void SetBudgetSource(const BudgetSource* budgets) { disruptions_.SetBudgetSource(budgets); }
  void SetEventSink(EventSink* events) { disruptions_.SetEventSink(events); }
  void SetEvictionOptions(GangEvictorOptions options) { evictor_.SetOptions(options); }

  // --- verbs -------------------------------------------------------------------------
  FilterResult Filter(const FilterArgs& args) { return filter_.Filter(args); }
  std::vector<HostScore> Prioritize(const FilterArgs& args) { return prioritize_.Prioritize(args); }
  PreemptResult Preempt(const PreemptArgs& args) { return preempt_.Preempt(args); }
  void Bind(const BindArgs& args, BindCallback done) { bind_.Bind(args, std::move(done)); }

  void Tick();

  // --- introspection -----------------------------------------------------------------
  std::string Explain(std::string_view ns_name) const;
  json::Json StateJson() const;
  // Runs `read` over the ledger under the read lock (GPU gauges on scrape; keep it short).
  void ReadLedger(const std::function<void(const Ledger&)>& read) const;
  size_t HeldBinds() const { return bind_.HeldBinds(); }
  const ExtenderStats& stats() const { return stats_; }
  const ExtenderConfig& config() const { return config_; }
  // Waits until every queued API write (and its bind callbacks) has run.
  // Runs between an admission's planning (shared lock released) and its commit: tests
  // change the ledger there to exercise the commit's re-check. Set before Tick runs.
  void SetAdmissionHookForTest(std::function<void()> hook) { admission_hook_for_test_ = std::move(hook); }
  void DrainForTest() {
    io_.Drain();
    evictor_.Drain();
    io_.Drain();
  }

 private:
  struct PlannedEviction;  // admission.cc: a victim gang a pass chose
  struct AdmissionPlan;    // admission.cc: what one pass decided
  class AdmissionDriver;  // admission.cc: the ledger as the engine's (read-only) driver
  friend class AdmissionDriver;

  std::optional<int> EffectiveMin(const GangRecord& g, MonotonicTime now) const;
  placement::GangSpec SpecOf(const GangRecord& g, int members) const;
  // Plans and reserves (filter, for an ungated gang; mu_ held exclusively, admission_mu_
  // not held); "" on success, else why not (also kept in last_no_fit). A plan beyond the
  // gang's team queue's quota is refused with the queue's reason (QuotaRefusal), and
  // *over_quota set: preempting on its nodes would not help (it fits there).
  std::string TryPlan(GangRecord& g, MonotonicTime now, bool* over_quota) override;
  std::string TryPlanOnce(GangRecord& g, MonotonicTime now, bool* over_quota);  // TryPlan without the count
  // Why `members` of `g` on `pool` do not fit in its team queue now ("" = they do): the
  // engine's queue ledger plus uncounted_. mu_ held exclusively (reads engine_ and queues_
  // without admission_mu_: see the locking rule at the members).
  std::string QuotaRefusal(const GangRecord& g, const std::string& pool, int members);
  // Remembers in uncounted_ a gang that now holds GPUs the engine does not count yet. mu_ held exclusively.
  void RecordUncounted(const GangRecord& g, const std::string& pool, int members);
  // Drops from uncounted_ what the engine counts now and gangs that hold nothing. mu_ held exclusively.
  void PruneUncounted();
  bool HoldsGpus(const GangRecord& g) const;  // some member holds GPUs (lock held)
  // The cluster as a gang of priority `priority` may plan on it: the ledger's state, minus the
  // GPUs that pending higher-priority pods were nominated to by kube-scheduler's preemption
  // (nullopt = no such pod; plan on the ledger's state itself).
  std::optional<placement::ClusterState> StateWithNominatedHolds(const placement::ClusterState& base,
                                                                int priority) const;
  // Bind barriers past their deadline (BindVerb) and plans nobody binds against.
  bool AnyExpired(MonotonicTime now) const;         // shared lock held
  void ExpireBarriersAndPlans(MonotonicTime now);   // exclusive lock held
  // The admission pass (admission_mu_ held): Pass under the shared lock, each admission
  // committed by CommitAdmission under the exclusive lock; then FinishPass (exclusive).
  void Admit(MonotonicTime now);
  void Pass(MonotonicTime now, std::shared_lock<std::shared_mutex>& shared, AdmissionPlan& plan);
  // Re-checks and reserves one admission, lifts its gates; nullopt if it no longer holds.
  std::optional<std::vector<PodUid>> CommitAdmission(const GangKey& key, const std::set<PodUid>& members,
                                                     placement::GangPlan plan, MonotonicTime now);
  void FinishPass(AdmissionPlan& plan);
  // Why a planned admission no longer holds on the ledger ("" = it does). Lock held.
  std::string AdmissionConflict(const GangRecord* g, const std::set<PodUid>& members,
                                const placement::GangPlan& plan) const;
  void CarryOutEviction(const PlannedEviction& e);  // exclusive lock held
  const TrainingJobInfo* JobOf(const GangKey& gang) const;  // the TrainingJob its first member runs
  scheduling::GangRequest EngineRequestOf(const GangRecord& g, int members) const override;
  // The team queue a gang runs in: its first member's phalanx.io/queue label, else the
  // queue selecting its namespace, else "" (the default queue). admission_mu_ and mu_ held,
  // or mu_ held exclusively (the locking rule at the members).
  std::string QueueOf(const GangRecord& g) const;
  // The same for one pod (a gang's first member, a MIG pod): one rule for both.
  std::string QueueOfPod(const PodInfo& pod) const;
  // QuotaRefusal's core: why `amount` more of `key` in the queue `named` on `pool` does not
  // fit ("" = it does), counting uncounted_. Queues on, uncounted_ pruned, mu_ held exclusively.
  std::string QuotaRefusalOf(const GangKey& key, const std::string& named, const std::string& pool,
                             scheduling::Milli amount);
  // --- MIG pods in team queues (mig_queues.cc) ---
  // Why `pod`'s queue has no room for its MIG devices, per pool a queue has a quota in (a
  // pool not named: room, or not limited). Empty without queues. mu_ held exclusively.
  PoolRefusals MigQuotaRefusals(const PodInfo& pod) override;
  // What the quota check judges of a MIG pod: its booking key and milli-GPUs; nullopt when
  // there is nothing to judge (queues off, no countable MIG request, or the pod is counted
  // already: a retried filter or bind). mu_ held exclusively.
  std::optional<std::pair<GangKey, scheduling::Milli>> MigQuotaSubject(const PodInfo& pod);
  // The commit point at bind: why `pod` may not take its MIG devices on `node` ("" = it may;
  // a pod counted already may). mu_ held exclusively.
  std::string MigQuotaRefusalAt(const PodInfo& pod, const NodeName& node) override;
  // Counts a MIG pod just bound on `node` in uncounted_ until the next pass books it.
  void RecordUncountedMig(const PodInfo& pod, const NodeName& node) override;  // mu_ held exclusively
  // The pass: books every pod holding MIG devices in the engine's queue ledger
  // (Engine::BookOutside), unbooks those gone. True if a booking was dropped (quota freed).
  // admission_mu_ and mu_ (shared) held.
  bool BookMigHolders(MonotonicTime now);
  bool QueuesOn() const override { return queues_on_.load(); }
  std::vector<QueueStatusInfo> QueueStatusesLocked() const;  // admission_mu_ and mu_ held
  // "; queue team-a (H100: 8/8 nominal GPUs used, 0 borrowed, 0 lent)"; "" without queues.
  std::string DescribeQueue(const GangRecord& g) const;      // admission_mu_ and mu_ held
  std::string PoolOf(const GangRecord& g) const;  // the capacity pool a running gang holds GPUs in
  void LiftGates(const GangRecord& g);              // exclusive lock held
  // --- ungated gangs in kube-scheduler's unschedulable queue (gang_requeue.cc) ---
  // Plans complete ungated gangs refused at filter and touches their waiting members.
  void RequeueUngatedGangs(MonotonicTime now);  // admission_mu_ held; takes mu_
  bool RequeueDue(const GangRecord& g, MonotonicTime now) const;  // admission_mu_ and mu_ held

  const ExtenderConfig config_;
  Clock& clock_;
  ClusterWriter& writer_;
  Leadership& leadership_;
  ExtenderStats stats_;

  // Admission: one pass at a time; the engine and its bookkeeping. Taken before mu_.
  //
  // Locking rule for engine_ and queues_ (the team queues filter checks): they change only
  // while admission_mu_ AND mu_ (shared suffices) are held, so they may be read either under
  // admission_mu_ (Tick, Preempt, Explain, status) or under mu_ held exclusively without
  // admission_mu_ (filter's quota check: TryPlan -> QuotaRefusal; a MIG pod's: Filter ->
  // MigQuotaRefusals, and bind's, taken exclusively only while queues_on_, so a MIG filter
  // without queues stays on the shared lock). Filter never changes them:
  // a pass may be suspended inside engine_.Pass (AdmissionDriver::Admit lets mu_ go to
  // commit) while filter holds mu_; the engine is then between two whole steps, never inside one.
  mutable std::mutex admission_mu_;
  scheduling::Engine engine_;                     // guarded by admission_mu_ + mu_ (the rule above)
  std::map<GangKey, int> engine_waiting_;         // guarded by admission_mu_: gangs queued in engine_ -> size
  std::set<GangKey> engine_running_;              // guarded by admission_mu_: gangs engine_ admitted or adopted
  uint64_t release_epoch_seen_ = ~uint64_t{0};    // guarded by admission_mu_: ledger release epoch at the last pass
  MonotonicTime last_full_pass_{};                // guarded by admission_mu_
  QueueAssignment queues_;                        // guarded by admission_mu_ + mu_ (the rule above): from the GpuQueues
  std::map<GangKey, std::string> engine_queue_of_;  // guarded by admission_mu_: queue each engine gang was given
  std::map<GangKey, std::pair<int, int>> requeue_tried_;  // guarded by admission_mu_: (members, min) planned at tick
  std::map<PodUid, MonotonicTime> requeued_;              // guarded by admission_mu_: member -> plan it was touched for
  std::function<void()> admission_hook_for_test_;
  // MIG pods booked in engine_ (BookMigHolders): when first booked (engine seconds).
  std::map<PodUid, double> mig_booked_;            // guarded by admission_mu_
  uint64_t mig_version_seen_ = ~uint64_t{0};       // guarded by admission_mu_: Ledger::mig_version at the last booking
  // Whether engine_ has team queues: filter reads it without a lock to take the exclusive
  // lock for a MIG pod's quota check only when there are queues (the answer under the lock
  // is engine_'s own). Written with queues_ (SetQueues).
  std::atomic<bool> queues_on_{false};

  mutable std::shared_mutex mu_;
  Ledger ledger_;                                 // guarded by mu_
  // Gangs holding GPUs (a plan or bound members) that engine_'s queue ledger does not count
  // yet: planned at filter (the next pass adopts them) or committed by a pass whose engine
  // has not recorded them yet. Filter's quota check adds them; entries go once the engine
  // counts the gang or it holds nothing. Guarded by mu_ (written only under it exclusively).
  struct UncountedUse {
    std::string queue;  // as named (QueueOf); resolved when checked
    std::string pool;
    scheduling::Milli amount = 0;
    int priority = 0;
    PodUid mig_pod;  // a MIG pod (key MigBookingKey): counted while it holds MIG devices
  };
  std::map<GangKey, UncountedUse> uncounted_;
  RequestMemory memory_;  // its own (leaf) lock

  // What the verbs see (verbs/verb_handle.h), and the verbs. The bind barriers are bind_'s,
  // guarded by mu_. Declared before evictor_ and io_, whose threads run their callbacks.
  VerbHandle handle_{config_, clock_, leadership_, stats_, mu_, ledger_, memory_};
  Disruptions disruptions_{clock_, ledger_, stats_, {writer_, io_}, evictor_};  // outlives evictor_ (its reports)
  FilterVerb filter_{handle_, *this};
  PrioritizeVerb prioritize_{handle_};
  PreemptVerb preempt_{handle_, admission_mu_, engine_, disruptions_, *this};
  BindVerb bind_{handle_, {writer_, io_}, *this};

  GangEvictor evictor_{writer_};  // before io_: finishes its jobs after io_ has stopped
  WritePool io_;  // last: its threads stop before the members they use go away
};

}  // namespace phalanx::extender
