// What the write task running on this thread is allowed: its lane (which writes may overtake
// it) and its deadline (when the kube-scheduler request it serves gives up). Set by WritePool
// for each task and by the task itself (ScopedWriteDeadline); read by BudgetedTransport, so the
// writes of KubeClusterWriter are budgeted and bounded without passing either through every
// ClusterWriter call. Thread-local; outside a task: kBulk, no deadline.
#pragma once

#include <chrono>
#include <optional>

namespace phalanx::extender {

using WriteClock = std::chrono::steady_clock;

enum class WriteLane {
  kBind,  // one pod's bind (and bind replies): never waits behind a gang's writes
  kBulk,  // gang gate lifts and commits, recovery, evictions, preemption requests
};

WriteLane CurrentWriteLane();
std::optional<WriteClock::time_point> CurrentWriteDeadline();

class ScopedWriteLane {
 public:
  explicit ScopedWriteLane(WriteLane lane);
  ~ScopedWriteLane();
  ScopedWriteLane(const ScopedWriteLane&) = delete;
  ScopedWriteLane& operator=(const ScopedWriteLane&) = delete;

 private:
  WriteLane saved_;
};

// Requests sent while it lives fail (DeadlineExceeded) once `deadline` has passed, and wait no
// longer than it for an answer. nullopt = no deadline (only the per-request timeout).
class ScopedWriteDeadline {
 public:
  explicit ScopedWriteDeadline(std::optional<WriteClock::time_point> deadline);
  ~ScopedWriteDeadline();
  ScopedWriteDeadline(const ScopedWriteDeadline&) = delete;
  ScopedWriteDeadline& operator=(const ScopedWriteDeadline&) = delete;

 private:
  std::optional<WriteClock::time_point> saved_;
};

}  // namespace phalanx::extender
