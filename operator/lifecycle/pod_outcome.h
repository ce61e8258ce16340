// Classification of one pod of the current attempt (docs/architecture.md §2.4): still active, done,
// failed (the job's fault: counts against maxFailures, backs off) or disrupted (not the
// job's fault: counts against maxDisruptions, restarts at once). Pure; thread-safe.
#pragma once

#include <string>

#include "core/base/clock.h"
#include "operator/api/observed_pod.h"

namespace phalanx::op {

enum class PodOutcomeKind { kActive, kSucceeded, kFailure, kDisruption };

struct PodOutcome {
  PodOutcomeKind kind = PodOutcomeKind::kActive;
  // Bounded vocabulary, used as a metric label: DisruptionTarget reasons
  // (PreemptionByScheduler, EvictionByEvictionAPI, DeletionByTaintManager, ...), NodeLost,
  // Evicted, PodDeleted; for failures the container's terminated reason (Error, OOMKilled, ...).
  std::string reason;
  std::string message;  // human detail for events and conditions
};

// `pod` must belong to the current attempt and the attempt must have no restart pending
// (a pod the operator deletes itself is not a disruption).
PodOutcome ClassifyPod(const ObservedPod& pod);

}  // namespace phalanx::op
