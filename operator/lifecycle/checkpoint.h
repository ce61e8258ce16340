// The checkpoint record (docs/architecture.md §2.4): workers report {"step":N,"path":P,"committed":true}
// in their termination message or to the progress endpoint; the operator keeps the newest
// committed one in status.checkpoint.lastCommitted. The record only moves forward: an
// older, equal or uncommitted report never replaces it, so a restart always resumes
// from the newest checkpoint anyone saw. Pure; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/base/result.h"
#include "operator/api/training_job.h"

namespace phalanx::op {

struct CheckpointReport {
  int64_t step = 0;
  std::string path;
  bool committed = false;
};

// Parses a report. Termination messages may carry log text before the record (a
// FallbackToLogsOnError tail), so the last line that parses as an object wins.
// kInvalidArgument when no line is a valid report.
Result<CheckpointReport> ParseCheckpointReport(std::string_view text);

// Applies `report` (from a pod of `attempt`, seen at `time`). Returns true when the
// record moved forward. A newer checkpoint also resets the failure backoff: the job
// made progress, so the next failure is not "consecutive".
bool ApplyCheckpointReport(TrainingJobStatus& status, const CheckpointReport& report,
                           int32_t attempt, SystemTime time);

}  // namespace phalanx::op
