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
  report.prices = options.sim.prices;
  if (cluster.queues.enabled()) {
    // Jobs naming no configured queue run in the default one: say how many.
    const scheduling::QueueLedger resolver(cluster.queues);
    int defaulted = 0;
    for (const Job& j : workload.jobs) defaulted += resolver.Resolve(j.queue) != j.queue ? 1 : 0;
    if (defaulted > 0) {
      report.notes.push_back(fmt::format("{} of {} jobs name no queue the cluster defines: they run in the default queue {}",
                                         defaulted, workload.jobs.size(), cluster.queues.default_queue));
    }
  }
  for (const std::string& name : options.policies) {
    PolicyOptions policy_options = options.policy;
    policy_options.queues = cluster.queues;
    SimConfig sim_config = options.sim;
    sim_config.queues = cluster.queues;
    PHX_ASSIGN_OR_RETURN(std::unique_ptr<Policy> policy, MakePolicy(name, policy_options));
    PHX_ASSIGN_OR_RETURN(SimCluster built, BuildSimCluster(cluster));
    sim_config.node_groups = std::move(built.node_groups);
    if (options.on_policy) options.on_policy(name);
    Simulator sim(workload, std::move(built.state), std::move(built.mig), *policy, sim_config);
    report.policies.push_back(sim.Run());
  }
  return report;
}

}  // namespace phalanx::sim
