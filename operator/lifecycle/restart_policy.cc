#include "operator/lifecycle/restart_policy.h"

#include <algorithm>

#include <fmt/format.h>

#include "operator/api/time_format.h"

namespace phalanx::op {

Duration FailureBackoff(const BackoffSpec& backoff, int32_t consecutive_failures) {
  const int64_t initial = std::max<int32_t>(backoff.initial_seconds, 0);
  const int64_t cap = std::max<int64_t>(backoff.max_seconds, initial);
  const int32_t n = std::max(consecutive_failures, 1);
  int64_t delay = initial;
  for (int32_t i = 1; i < n && delay < cap; ++i) delay *= 2;
  return std::chrono::seconds(std::min(delay, cap));
}

std::string CountRestart(TrainingJobStatus& status, const FailurePolicy& policy,
                         RestartClass restart_class, const std::string& reason) {
  switch (restart_class) {
    case RestartClass::kFailure:
      ++status.failures;
      ++status.consecutive_failures;
      ++status.failures_by_reason[reason];
      if (status.failures > policy.max_failures) {
        return fmt::format("{} failures exceed failurePolicy.maxFailures={}", status.failures,
                           policy.max_failures);
      }
      return "";
    case RestartClass::kDisruption:
      ++status.disruptions;
      ++status.disruptions_by_reason[reason];
      if (policy.max_disruptions && status.disruptions > *policy.max_disruptions) {
        return fmt::format("{} disruptions exceed failurePolicy.maxDisruptions={}",
                           status.disruptions, *policy.max_disruptions);
      }
      return "";
    case RestartClass::kUpdate:
    case RestartClass::kSuspend:
      return "";
  }
  return "";
}

double LostGpuSeconds(int32_t total_gpus, std::optional<SystemTime> running_since,
                      const std::optional<CheckpointRecord>& last, SystemTime stop) {
  if (!running_since) return 0;
  SystemTime from = *running_since;
  if (last && last->time > from) from = last->time;
  return std::max(0.0, SecondsBetween(from, stop)) * total_gpus;
}

PreemptionCost ComputePreemptionCost(const TrainingJobSpec& spec, const TrainingJobStatus& status,
                                     SystemTime now) {
  PreemptionCost cost;
  cost.time = TruncateToSeconds(now);
  if (!status.running_since) return cost;
  cost.gpu_seconds_at_risk = LostGpuSeconds(spec.TotalGpus(), status.running_since, status.last_committed, now);
  const SystemTime since = status.last_committed ? status.last_committed->time : *status.running_since;
  cost.checkpoint_age_seconds = std::max(0.0, SecondsBetween(since, now));
  if (!spec.checkpoint.dir.empty()) cost.notice_seconds_needed = spec.checkpoint.flush_seconds;
  return cost;
}

}  // namespace phalanx::op
