// Helpers for the simulator tests: tiny clusters and workloads built in code.
#pragma once

#include <cstdlib>
#include <string>
#include <vector>

#include "sim/cluster/cluster_spec.h"
#include "sim/model/job.h"
#include "sim/model/tiers.h"

namespace phalanx::sim::testing {

inline std::string SourceDir() {
  const char* dir = std::getenv("PHALANX_SOURCE_DIR");
  return dir ? dir : ".";
}
inline std::string DataPath(const std::string& file) { return SourceDir() + "/tests/data/sim/" + file; }

inline ClusterSpec Cluster(int nodes, int gpus, IntraNodeTopology topo = IntraNodeTopology::kNvSwitch,
                           int nodes_per_rack = 0) {
  ClusterSpec spec;
  spec.name = "test";
  spec.groups.push_back(NodeGroup{.name = "n", .count = nodes, .gpu_model = "H100", .gpus_per_node = gpus,
                                  .topology = topo, .nodes_per_rack = nodes_per_rack});
  return spec;
}

inline Job MakeJob(double submit, double duration, int replicas, int gpus, int priority = kStandardPriority,
                   double checkpoint = 0) {
  Job j;
  j.submit = submit;
  j.duration = duration;
  j.replicas = replicas;
  j.gpus_per_replica = gpus;
  j.priority = priority;
  j.tier = TierName(priority);
  j.checkpoint_interval = checkpoint;
  return j;
}

inline Workload MakeWorkload(std::vector<Job> jobs) {
  Workload w;
  w.source = "test";
  w.format = "phalanx";
  for (size_t i = 0; i < jobs.size(); ++i) {
    jobs[i].line = static_cast<int>(i + 2);
    jobs[i].name = "job" + std::to_string(i);
  }
  w.jobs = std::move(jobs);
  FinalizeWorkload(w);
  return w;
}

}  // namespace phalanx::sim::testing
