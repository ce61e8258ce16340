#include "sim/engine/run.h"

#include <sstream>

#include <fmt/format.h>

namespace phalanx::sim {

Result<std::vector<std::string>> ParsePolicyList(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream in(list);
  std::string name;
  while (std::getline(in, name, ',')) {
    if (name.empty()) continue;
    if (name == "all") {
      for (const auto& n : PolicyNames()) out.push_back(n);
      continue;
    }
    PHX_RETURN_IF_ERROR(MakePolicy(name).status().ok() ? OkStatus() : MakePolicy(name).status());
    out.push_back(name);
  }
  if (out.empty()) return InvalidArgumentError("no policy given");
  return out;
}

Result<SimulationReport> RunSimulation(const ClusterSpec& cluster, const Workload& workload, const RunOptions& options) {
  SimulationReport report;
  report.cluster = cluster.name;
  report.cluster_nodes = cluster.TotalNodes();
  report.cluster_gpus = cluster.TotalGpus();
  report.trace = workload.source;
  report.trace_format = workload.format;
  report.jobs = static_cast<int>(workload.jobs.size());
  report.seed = options.seed;
  report.notes = workload.notes;
  for (const std::string& name : options.policies) {
    PHX_ASSIGN_OR_RETURN(std::unique_ptr<Policy> policy, MakePolicy(name, options.policy));
    PHX_ASSIGN_OR_RETURN(SimCluster built, BuildSimCluster(cluster));
    if (options.on_policy) options.on_policy(name);
    Simulator sim(workload, std::move(built.state), std::move(built.mig), *policy, options.sim);
    report.policies.push_back(sim.Run());
  }
  return report;
}

}  // namespace phalanx::sim
