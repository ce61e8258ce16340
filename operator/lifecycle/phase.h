// TrainingJob phases and the transitions between them (docs/architecture.md §2.4):
//   Pending -> Queued -> Starting -> Running -> Succeeded
//   any active phase -> Restarting -> Pending (next attempt) ; any active phase <-> Suspended
//   any active phase -> Failed
// Succeeded and Failed are terminal: nothing leaves them. Pure; thread-safe.
#pragma once

#include <string_view>

namespace phalanx::op {

enum class Phase {
  kNone,        // never reconciled
  kPending,     // pods of the current attempt being created
  kQueued,      // all pods exist, waiting for gang admission (gated or unscheduled)
  kStarting,    // all pods bound, not all running yet
  kRunning,     // every member running
  kRestarting,  // whole gang being torn down, or backing off before the next attempt
  kSuspended,   // spec.runPolicy.suspend: no pods
  kSucceeded,
  kFailed,
};

std::string_view PhaseName(Phase phase);
// Unknown names map to kNone (an empty or foreign status is treated as never reconciled).
Phase ParsePhase(std::string_view name);
bool IsTerminal(Phase phase);
// True when the table above allows from -> to (a phase may always stay where it is).
bool IsAllowedTransition(Phase from, Phase to);

}  // namespace phalanx::op
