// Disruptions: what taking GPUs from running pods involves, for the preempt verb and the
// admission pass alike: whether PodDisruptionBudgets allow evicting a victim set, what a victim
// loses (GPU-seconds at risk), asking a TrainingJob to checkpoint and stop
// (phalanx.io/preempt-request), evicting whole gangs (GangEvictor), and the Events that say so
// (component "Preempting").
// Reads the ledger: the caller holds the ledger lock (exclusively for RequestNotice, which
// records the request). Writes go to the write pool. Thread-safe otherwise.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/clock.h"
#include "extender/eviction/gang_evictor.h"
#include "extender/eviction/pod_disruption_budgets.h"
#include "extender/state/ledger.h"
#include "extender/verbs/verb_handle.h"
#include "extender/writes/event_sink.h"

namespace phalanx::extender {

class Disruptions {
 public:
  Disruptions(Clock& clock, Ledger& ledger, ExtenderStats& stats, WriteHandle writes, GangEvictor& evictor)
      : clock_(clock), ledger_(ledger), stats_(stats), w_(writes), evictor_(evictor) {}

  // Optional, set before the verbs are served (not owned; may be null).
  void SetBudgetSource(const BudgetSource* budgets) { budgets_ = budgets; }
  void SetEventSink(EventSink* events) { events_ = events; }

  // What evicting `pod` now loses: its TrainingJob's reported gpuSecondsAtRisk (*notice and *job
  // set from the job), else its GPUs times its run time. Lock held.
  double GpuSecondsAtRisk(const PodRecord& pod, SystemTime now, double* notice, std::string* job) const;
  // Why the API server would refuse evicting all of `victims` ("" = it would not). Lock held.
  std::string BudgetRefusal(const std::vector<const PodRecord*>& victims) const;
  // Asks each TrainingJob (ns/name -> request id) to checkpoint and stop; `reason` "" =
  // "preempted by <preemptor> (priority N)" (tier preemption). Exclusive lock held.
  void RequestNotice(const std::map<std::string, std::string>& jobs, const PodInfo& preemptor,
                     std::string_view reason = {});
  void Evict(EvictionJob job) { evictor_.Submit(std::move(job)); }
  void Event(const PodInfo& pod, std::string_view type, std::string_view reason, std::string_view note);
  // The GangEvictor's outcome of one set (counted, and an Event per member).
  void OnEvictionReport(const EvictionReport& report);

 private:
  Clock& clock_;
  Ledger& ledger_;
  ExtenderStats& stats_;
  WriteHandle w_;
  GangEvictor& evictor_;
  const BudgetSource* budgets_ = nullptr;
  EventSink* events_ = nullptr;
};

}  // namespace phalanx::extender
