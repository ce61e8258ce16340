// Synthetic workloads for benchmarks and tests: a seeded mix of single-GPU pods, small
// multi-GPU pods and multi-node gangs, arriving as a Poisson process at a chosen load.
#pragma once

#include <cstdint>

#include "sim/model/job.h"

namespace phalanx::sim {

struct SyntheticOptions {
  int64_t jobs = 1000;
  uint64_t seed = 1;
  int cluster_gpus = 512;  // arrival rate is set from it and `load`
  double load = 0.9;       // offered GPU-time / cluster GPU-time
  double mean_duration_s = 3600;
  int max_gang_members = 8;  // gangs of 2..max members x 8 GPUs
};

Workload GenerateSynthetic(const SyntheticOptions& options);

}  // namespace phalanx::sim
