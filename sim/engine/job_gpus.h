// GPUs a job holds, two ways. Shared by the simulator's source files.
#pragma once

#include "core/scheduling/queues.h"
#include "sim/model/job.h"

namespace phalanx::sim {

// Whole-GPU equivalents, as utilisation counts them (GPUs in MIG mode are counted apart,
// in slices).
inline double JobGpus(const Job& j) {
  if (j.IsMig()) return 0;
  return j.IsShare() ? j.milli / 1000.0 : static_cast<double>(j.TotalGpus());
}

// GPU-equivalents a job counts in its team queue, as the queue rules count them
// (core/scheduling/queues.h): whole GPUs, a share's fraction, and a MIG device's compute
// slices over 7 (MigProfileMilli: 3g.40gb = 0.428).
inline double QueueGpus(const Job& j) {
  if (!j.IsMig()) return JobGpus(j);
  return j.gpus_per_replica * static_cast<double>(scheduling::MigProfileMilli(j.mig_profile)) / scheduling::kMilliGpu;
}

}  // namespace phalanx::sim
