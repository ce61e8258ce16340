// One call that replays a workload under several policies (each on a fresh ledger).
#pragma once

#include <string>
#include <vector>

#include "core/base/result.h"
#include "sim/cluster/cluster_spec.h"
#include "sim/engine/simulator.h"
#include "sim/policy/policies.h"

namespace phalanx::sim {

struct RunOptions {
  std::vector<std::string> policies;  // names; "all" expands
  PolicyOptions policy;
  SimConfig sim;
  uint64_t seed = 1;
  // Called before each policy starts (progress display).
  std::function<void(const std::string&)> on_policy;
};

Result<SimulationReport> RunSimulation(const ClusterSpec& cluster, const Workload& workload, const RunOptions& options);

// "phalanx,gang-fifo" / "all" -> names; InvalidArgument for unknown ones.
Result<std::vector<std::string>> ParsePolicyList(const std::string& list);

}  // namespace phalanx::sim
