// A job of a simulated workload: what every trace reader produces and every policy
// consumes. A job is a gang of `replicas` members (pods) of `gpus_per_replica` whole GPUs
// each, or one member holding a fractional share (`milli` < 1000, openb `gpu_milli`), or
// one member holding MIG devices of one profile (`mig_profile`).
// Times are seconds relative to the start of the trace.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace phalanx::sim {

using JobId = int32_t;

struct Job {
  JobId id = 0;         // dense, 0..n-1 in submit order
  std::string name;     // from the trace, or "<format>-<line>"
  double submit = 0;    // s since trace start
  double duration = 0;  // s of work once all members run
  int replicas = 1;
  int gpus_per_replica = 1;
  int milli = 1000;  // per GPU; < 1000 only for a single-GPU share
  int priority = 1000;
  std::string tier = "standard";
  std::string queue;  // team / virtual cluster; reported, not scheduled on
  // Seconds between checkpoints; 0 = never checkpoints (a preemption loses everything).
  double checkpoint_interval = 0;
  // MIG profile ("1g.10gb"): the job is one pod requesting `gpus_per_replica` devices of
  // nvidia.com/mig-<profile> (replicas == 1); "" = whole GPUs or a share.
  std::string mig_profile;
  // Capacity pool (GPU product) the job needs; nullopt = any pool.
  std::optional<std::string> pool;
  // runPolicy.activeDeadlineSeconds (trace column active_deadline); 0 = none. Only a
  // duration hint's upper bound here (sim/policy/duration_hints.h): never enforced.
  double active_deadline = 0;
  int line = 0;  // line in the trace file (for messages)

  int TotalGpus() const { return replicas * gpus_per_replica; }
  bool IsShare() const { return milli < 1000; }
  bool IsMig() const { return !mig_profile.empty(); }
};

struct Workload {
  std::string source;  // file name
  std::string format;  // phalanx | philly | openb
  std::vector<Job> jobs;  // sorted by submit, ids dense in that order
  // Human-readable notes about mappings the reader applied (shown in reports).
  std::vector<std::string> notes;
};

// Sorts by (submit, line) and renumbers ids densely.
void FinalizeWorkload(Workload& workload);

// --time-scale for every trace format: divides each job's gap from the first submit by
// `scale` (2 = the same jobs arriving twice as fast: twice the offered load) and notes it
// ("<format>: submit gaps divided by 2"). The order is unchanged. No-op for a scale of 1,
// or one that is not > 0 (the CLI refuses those).
void ScaleSubmitGaps(Workload& workload, double scale);

}  // namespace phalanx::sim
