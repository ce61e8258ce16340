// The scheduling policies a replay can compare (docs/simulator.md, "Policies"):
//   phalanx       the extender's core logic: admission queue per capacity pool
//                 (priority, FIFO, head-of-line hold), topology-aware gang plans,
//                 whole-gang tier preemption choosing the least lost work;
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
#include "sim/engine/simulator.h"

namespace phalanx::sim {

struct PolicyOptions {
  double head_of_line_s = 300;  // phalanx: AdmissionConfig::head_of_line
  // phalanx: preemption searches per pool per pass (each builds every lower-tier
  // victim; bounded so a pass stays cheap when many high-tier jobs wait).
  int preemption_attempts_per_pass = 2;
};

const std::vector<std::string>& PolicyNames();
// InvalidArgument naming the valid policies for an unknown name.
Result<std::unique_ptr<Policy>> MakePolicy(std::string_view name, const PolicyOptions& options = {});

}  // namespace phalanx::sim
