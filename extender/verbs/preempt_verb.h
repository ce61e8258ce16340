// PreemptVerb: kube-scheduler's preempt verb, for pods that are not gated gangs
// (docs/architecture.md §2.5 "Preemption"). Accepts only victim sets of whole lower-tier gangs
// after which the preemptor really fits, chosen and priced by the scheduling engine's own rule
// (Engine::QuotePreemption); vetoes (and asks for a graceful preemption) when a TrainingJob
// victim needs notice; members on other nodes are evicted by the extender (Disruptions).
// Takes the admission lock (the engine's) and then the ledger lock. Thread-safe.
#pragma once

#include <mutex>

#include "core/scheduling/engine.h"
#include "extender/eviction/disruptions.h"
#include "extender/verbs/verb_handle.h"
#include "extender/verbs/wire.h"

namespace phalanx::extender {

class PreemptVerb {
 public:
  // `engine` is guarded by `admission_mu` (and the ledger lock: the rule at Extender's members).
  PreemptVerb(VerbHandle& handle, std::mutex& admission_mu, scheduling::Engine& engine, Disruptions& disruptions,
              AdmissionHandle& admission)
      : h_(handle), admission_mu_(admission_mu), engine_(engine), disruptions_(disruptions), admission_(admission) {}

  PreemptResult Preempt(const PreemptArgs& args);

 private:
  PreemptResult PreemptGang(const PreemptArgs& args, const PodRecord& preemptor);  // both locks held

  VerbHandle& h_;
  std::mutex& admission_mu_;
  scheduling::Engine& engine_;
  Disruptions& disruptions_;
  AdmissionHandle& admission_;
};

}  // namespace phalanx::extender
