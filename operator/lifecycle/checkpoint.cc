#include "operator/lifecycle/checkpoint.h"

#include <fmt/format.h>

#include "core/json/json.h"
#include "operator/api/time_format.h"

namespace phalanx::op {

namespace {

Result<CheckpointReport> ParseLine(std::string_view line) {
  PHX_ASSIGN_OR_RETURN(json::Json j, json::Parse(line, 64 * 1024));
  if (!j.is_object()) return InvalidArgumentError("checkpoint report: expected object");
  CheckpointReport r;
  PHX_ASSIGN_OR_RETURN(int64_t step, json::GetInt(j, "step", ""));
  if (step < 0) return InvalidArgumentError("checkpoint report: step must be >= 0");
  r.step = step;
  PHX_ASSIGN_OR_RETURN(r.path, json::GetString(j, "path", ""));
  auto committed = j.find("committed");
  if (committed != j.end()) {
    if (!committed->is_boolean()) return InvalidArgumentError("checkpoint report: committed must be a boolean");
    r.committed = committed->get<bool>();
  }
  return r;
}

}  // namespace

Result<CheckpointReport> ParseCheckpointReport(std::string_view text) {
  Status last_error = InvalidArgumentError("checkpoint report: empty message");
  size_t end = text.size();
  while (end > 0) {
    size_t start = text.rfind('\n', end - 1);
    start = start == std::string_view::npos ? 0 : start + 1;
    std::string_view line = text.substr(start, end - start);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    if (!line.empty() && line.front() == '{') {
      auto r = ParseLine(line);
      if (r.ok()) return r;
      last_error = r.status();
    }
    end = start == 0 ? 0 : start - 1;
  }
  return last_error;
}

bool ApplyCheckpointReport(TrainingJobStatus& status, const CheckpointReport& report,
                           int32_t attempt, SystemTime time) {
  if (!report.committed || report.path.empty()) return false;
  if (status.last_committed && report.step <= status.last_committed->step) return false;
  status.last_committed = CheckpointRecord{report.step, report.path, TruncateToSeconds(time), attempt};
  status.consecutive_failures = 0;
  return true;
}

}  // namespace phalanx::op
