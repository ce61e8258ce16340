// Extender: the scheduling logic of phalanx-extender (docs/architecture.md §2.5, §3, §4), over the
// Ledger, with every API write behind ClusterWriter and time behind Clock. It owns the shared
// state and its locks and wires the parts (extender/README.md has the map):
//   verbs/      FilterVerb, PrioritizeVerb, PreemptVerb, BindVerb: kube-scheduler's four verbs,
//               each over a narrow handle (verbs/verb_handle.h) to the state below.
//   admission/  AdmissionPass: the scheduling engine of core/scheduling over the ledger
//               (priority then first submission, heads and backfill; docs/algorithms.md §8),
//               ungated gangs planned at filter and requeued. Tick runs it after barrier
//               timeouts and plan expiry; the daemon calls Tick every 100 ms, tests after
//               advancing a FakeClock. The pass is planned under the shared lock and committed,
//               re-checked, under the exclusive one.
//   queues/     QueueQuotas: the team queues' quota for what the engine does not admit itself
//               (gangs planned at filter, MIG pods: mig/mig_queues.cc); AdmissionPass answers
//               the verbs through AdmissionHandle.
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
#include "extender/admission/admission_pass.h"
#include "extender/admission/engine_metrics.h"
#include "extender/config.h"
#include "extender/eviction/disruptions.h"
#include "extender/eviction/gang_evictor.h"
#include "extender/eviction/pod_disruption_budgets.h"
#include "extender/mig/mig_filter.h"
#include "extender/queues/queue_quotas.h"
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

class Extender final {
 public:
  using BindCallback = extender::BindCallback;  // "" = bound

  // `writers`: threads of the write pool (--writers).
  Extender(ExtenderConfig config, Clock& clock, ClusterWriter& writer, Leadership& leadership, int writers = 4);
  ~Extender();
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
  // The engine's counts since start and its run-time ratio per tier, hinted and not
  // (engine_metrics.h; /debug/state "durationCalibration"), read under one lock.
  EngineReadout ReadEngine() const;
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
  void SetAdmissionHookForTest(std::function<void()> hook) { admission_.SetHookForTest(std::move(hook)); }
  void DrainForTest() {
    io_.Drain();
    evictor_.Drain();
    io_.Drain();
  }

 private:
  // Bind barriers past their deadline (BindVerb) and plans nobody binds against.
  bool AnyExpired(MonotonicTime now) const;         // shared lock held
  void ExpireBarriersAndPlans(MonotonicTime now);   // exclusive lock held
  EngineReadout ReadEngineLocked() const;  // admission lock held

  const ExtenderConfig config_;
  Clock& clock_;
  ClusterWriter& writer_;
  Leadership& leadership_;
  ExtenderStats stats_;

  // Admission: one pass at a time; the engine and its bookkeeping (admission_). Taken before mu_.
  //
  // Locking rule for engine_ and the team queues (quotas_): they change only while
  // admission_mu_ AND mu_ (shared suffices) are held, so they may be read either under
  // admission_mu_ (Tick, Preempt, Explain, status) or under mu_ held exclusively without
  // admission_mu_ (filter's quota check: TryPlan -> QueueQuotas::QuotaRefusal; a MIG pod's:
  // Filter -> MigQuotaRefusals, and bind's, taken exclusively only while the queues are on, so
  // a MIG filter without queues stays on the shared lock). Filter never changes them: a pass
  // may be suspended inside engine_.Pass (the pass's driver lets mu_ go to commit) while filter
  // holds mu_; the engine is then between two whole steps, never inside one.
  mutable std::mutex admission_mu_;
  scheduling::Engine engine_;  // guarded by admission_mu_ + mu_ (the rule above)

  mutable std::shared_mutex mu_;
  Ledger ledger_;  // guarded by mu_
  RequestMemory memory_;  // its own (leaf) lock

  // What the verbs see (verbs/verb_handle.h), and the verbs. The bind barriers are bind_'s,
  // guarded by mu_. Declared before evictor_ and io_, whose threads run their callbacks.
  VerbHandle handle_{config_, clock_, leadership_, stats_, mu_, ledger_, memory_};
  Disruptions disruptions_{clock_, ledger_, stats_, {writer_, io_}, evictor_};  // outlives evictor_ (its reports)
  // The team queues' quota outside the engine (guarded as engine_) and the admission pass
  // (its bookkeeping guarded by admission_mu_), which answers the verbs' AdmissionHandle.
  QueueQuotas quotas_{engine_, ledger_};
  AdmissionPass admission_{handle_, {writer_, io_}, engine_, disruptions_, quotas_};
  FilterVerb filter_{handle_, admission_};
  PrioritizeVerb prioritize_{handle_};
  PreemptVerb preempt_{handle_, admission_mu_, engine_, disruptions_, admission_};
  BindVerb bind_{handle_, {writer_, io_}, admission_};

  GangEvictor evictor_{writer_};  // before io_: finishes its jobs after io_ has stopped
  WritePool io_;  // last: its threads stop before the members they use go away
};

}  // namespace phalanx::extender
