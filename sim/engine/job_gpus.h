// Whole-GPU equivalents a job holds, as the engine's utilisation counts them (GPUs in MIG
// mode are counted apart, in slices). Shared by the simulator's source files.
#pragma once

#include "sim/model/job.h"

namespace phalanx::sim {

inline double JobGpus(const Job& j) {
  if (j.IsMig()) return 0;
  return j.IsShare() ? j.milli / 1000.0 : static_cast<double>(j.TotalGpus());
}

}  // namespace phalanx::sim
