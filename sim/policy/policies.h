// The scheduling policies a replay can compare (docs/simulator.md, "Policies"):
//   phalanx       the scheduling engine the extender runs (core/scheduling): queue per
//                 capacity pool (priority, first submission), topology-aware gang
//                 plans, backfill behind a reserved head, whole-gang preemption only
//                 when it pays for itself (docs/algorithms.md);
//   k8s-default   kube-scheduler without gangs: pods bind one by one as they fit,
//                 spread / least-allocated, so a gang can hold GPUs while siblings wait;
//   gang-fifo     all-or-nothing gangs, strict FIFO (the head blocks everyone), first fit;
//   gang-binpack  Volcano-like: all-or-nothing, priority then FIFO, best fit, no blocking.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/result.h"
#include "core/scheduling/queues.h"
#include "core/scheduling/tier_policy.h"
#include "sim/engine/simulator.h"
#include "sim/policy/duration_hints.h"

namespace phalanx::sim {

struct PolicyOptions {
  // phalanx: the engine's tiers, backfill switch, restart overhead, search budget.
  scheduling::EnginePolicy engine = scheduling::EnginePolicy::Defaults();
  // phalanx: the run time each job tells (duration_hints.h): exact (the work left),
  // noisy (overestimated, --hint-noise) or none (activeDeadlineSeconds, else the tier
  // default; --no-duration-hints).
  HintModel hints;
  // false: as hints.mode = kNone (kept for callers that predate HintModel).
  bool duration_hints = true;
  // phalanx: team queues (the cluster description's `queues:`); empty = none.
  scheduling::QueueConfig queues;
};

const std::vector<std::string>& PolicyNames();
// InvalidArgument naming the valid policies for an unknown name.
Result<std::unique_ptr<Policy>> MakePolicy(std::string_view name, const PolicyOptions& options = {});

}  // namespace phalanx::sim
