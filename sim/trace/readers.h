// Workload readers (docs/simulator.md, "Trace formats"). Each returns jobs sorted by
// submit time, with the mapping it applied recorded in Workload::notes.
#pragma once

#include <cstdint>
#include <string>

#include "core/base/result.h"
#include "sim/model/job.h"

namespace phalanx::sim {

struct ReaderOptions {
  uint64_t seed = 1;  // tier / checkpoint assignment for traces that have none
  // Divides every gap between submit times (every format): 10 = ten times the load.
  double time_scale = 1;
  int64_t max_jobs = 0;  // 0 = all (the first max_jobs by submit time)
};

// Phalanx CSV: submit_time,duration,replicas,gpus_per_replica[,tier][,queue]
// [,checkpoint_interval][,name][,gpu_milli][,pool][,mig_profile] (header row required;
// any order).
Result<Workload> ReadPhalanxCsv(const std::string& path, const ReaderOptions& options = {});

// Philly as preprocessed by Pollux: timestamp,duration,num_gpus,gpu_time,cluster.
Result<Workload> ReadPhillyCsv(const std::string& path, const ReaderOptions& options = {});

// Alibaba openb pod list: name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,
// pod_phase,creation_time,deletion_time,scheduled_time. CPU-only pods are skipped.
Result<Workload> ReadOpenbPods(const std::string& path, const ReaderOptions& options = {});

// By format name: "phalanx" | "philly" | "openb".
Result<Workload> ReadTrace(const std::string& path, const std::string& format, const ReaderOptions& options = {});

// The seeded tier / checkpoint rule for traces without them (Philly): 10% high, 70%
// standard, 20% spot; 75% checkpoint every 1800 s, the rest never.
void AssignSeededTierAndCheckpoint(Job& job, uint64_t seed, uint64_t index);

}  // namespace phalanx::sim
