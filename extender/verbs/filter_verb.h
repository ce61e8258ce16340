// FilterVerb and PrioritizeVerb: kube-scheduler's filter and prioritize verbs
// (docs/architecture.md §2.5, docs/extender.md "The wire format").
//   Filter      non-gang pods: per-node fit against the ledger (GPUs reserved by gang plans are
//               never offered); gang members: pinned to their planned node; an ungated gang is
//               planned here on its first member's filter, within its team queue's quota
//               (AdmissionHandle::TryPlan; a queue-labelled single GPU pod is a gang of one:
//               k8s_objects.h FormsImplicitGang). MIG pods: mig_filter.h, within their team
//               queue's quota.
//   Prioritize  topology + bin-packing (+ locality) score 0..10; planned node = 10.
// Filter reads the ledger under the shared lock, and takes it exclusively only to learn a pod
// or node, to plan an ungated gang or for a MIG pod's quota check. Thread-safe.
#pragma once

#include <string_view>
#include <utility>
#include <vector>

#include "extender/verbs/no_fit_cache.h"
#include "extender/verbs/verb_handle.h"
#include "extender/verbs/wire.h"

namespace phalanx::extender {

class FilterVerb {
 public:
  FilterVerb(VerbHandle& handle, AdmissionHandle& admission) : h_(handle), admission_(admission) {}

  FilterResult Filter(const FilterArgs& args);

 private:
  FilterResult FilterGang(const FilterArgs& args);
  // The pod's `phalanx explain` summary of this filter (RequestMemory).
  void RecordFilterSummary(const PodInfo& pod, const FilterResult& r);
  // The same from counts per reason text (the whole-GPU filter's detailed texts).
  void RecordFilterSummary(const PodInfo& pod, size_t passed, size_t candidates,
                           const std::vector<std::pair<std::string_view, int>>& counts);

  VerbHandle& h_;
  AdmissionHandle& admission_;
  internal::NoFitCache no_fit_;  // whole-GPU answers where nothing fits (reply_only callers)
};

class PrioritizeVerb {
 public:
  explicit PrioritizeVerb(VerbHandle& handle) : h_(handle) {}

  std::vector<HostScore> Prioritize(const FilterArgs& args);

 private:
  VerbHandle& h_;
};

}  // namespace phalanx::extender
