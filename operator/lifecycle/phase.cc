#include "operator/lifecycle/phase.h"

namespace phalanx::op {

std::string_view PhaseName(Phase phase) {
  switch (phase) {
    case Phase::kNone: return "";
    case Phase::kPending: return "Pending";
    case Phase::kQueued: return "Queued";
    case Phase::kStarting: return "Starting";
    case Phase::kRunning: return "Running";
    case Phase::kRestarting: return "Restarting";
    case Phase::kSuspended: return "Suspended";
    case Phase::kSucceeded: return "Succeeded";
    case Phase::kFailed: return "Failed";
  }
  return "";
}

Phase ParsePhase(std::string_view name) {
  for (Phase p : {Phase::kPending, Phase::kQueued, Phase::kStarting, Phase::kRunning,
                  Phase::kRestarting, Phase::kSuspended, Phase::kSucceeded, Phase::kFailed}) {
    if (PhaseName(p) == name) return p;
  }
  return Phase::kNone;
}

bool IsTerminal(Phase phase) { return phase == Phase::kSucceeded || phase == Phase::kFailed; }

bool IsAllowedTransition(Phase from, Phase to) {
  if (from == to) return true;
  if (IsTerminal(from)) return false;
  if (to == Phase::kNone) return false;
  // Between reconciles a gang may progress several steps (created, admitted and running),
  // so forward jumps are legal; what matters is that nothing leaves a terminal phase and
  // nothing goes back to "never reconciled".
  return true;
}

}  // namespace phalanx::op
