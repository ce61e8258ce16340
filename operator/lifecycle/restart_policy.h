// Restart bookkeeping: backoff between failed attempts, the failure and disruption
// budgets, lost work and preemption cost. Pure; thread-safe.
#pragma once

#include <optional>
#include <string>

#include "operator/api/training_job.h"

namespace phalanx::op {

// Delay before the attempt after the n-th consecutive failure (n >= 1):
// min(max, initial * 2^(n-1)). No jitter: the delay is persisted as status.restart.notBefore,
// and one job restarting is no thundering herd.
Duration FailureBackoff(const BackoffSpec& backoff, int32_t consecutive_failures);

// Counts a restart of `restart_class` in status and returns why the job must now fail
// (empty when the budget still allows another attempt). Failures beyond maxFailures and
// disruptions beyond maxDisruptions fail the job; updates and suspends are free.
std::string CountRestart(TrainingJobStatus& status, const FailurePolicy& policy,
                         RestartClass restart_class, const std::string& reason);

// GPU-seconds of work lost when a gang that ran since `running_since` stops at `stop`:
// everything after the later of that start and the last committed checkpoint.
double LostGpuSeconds(int32_t total_gpus, std::optional<SystemTime> running_since,
                      const std::optional<CheckpointRecord>& last, SystemTime stop);

// status.preemptionCost at `now` (docs/architecture.md §2.4):
//   gpuSecondsAtRisk     = GPUs * seconds since max(running start, last checkpoint), 0 if not running
//   checkpointAgeSeconds = seconds since the last checkpoint (since the running start without one)
//   noticeSecondsNeeded  = checkpoint.flushSeconds when the job checkpoints and runs, else 0
PreemptionCost ComputePreemptionCost(const TrainingJobSpec& spec, const TrainingJobStatus& status,
                                     SystemTime now);

}  // namespace phalanx::op
