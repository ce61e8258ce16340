// Preemption (simulator.h): immediate eviction, graceful checkpoint-and-stop, the work a
// preemption would lose, and reclaim bookkeeping for team queues.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "sim/engine/job_gpus.h"
#include "sim/engine/simulator.h"

namespace phalanx::sim {

double Simulator::GpuSecondsAtRisk(JobId id) const {
  const Job& j = job(id);
  const JobRun& r = runs_[static_cast<size_t>(id)];
  if (r.phase != JobPhase::kRunning) return 0;
  const double elapsed = now_ - r.attempt_start;
  const double saved = j.checkpoint_interval > 0 ? std::floor(elapsed / j.checkpoint_interval) * j.checkpoint_interval : 0;
  return (elapsed - saved) * JobGpus(j);
}

Status Simulator::Preempt(JobId id) { return PreemptNow(id, false); }

Result<double> Simulator::RequestGracefulStop(JobId id) {
  const Job& j = job(id);
  JobRun& r = runs_[static_cast<size_t>(id)];
  if (r.phase != JobPhase::kRunning) return FailedPreconditionError(fmt::format("job {} is not running", j.name));
  if (config_.graceful_notice_s <= 0 || j.checkpoint_interval <= 0) return 0.0;
  if (!r.stopping) {
    r.stopping = true;
    events_.Push(now_ + config_.graceful_notice_s, EventType::kStop, id, r.token);
    ++real_pending_;
  }
  return config_.graceful_notice_s;
}

void Simulator::HandleStop(JobId id, uint32_t token) {
  const JobRun& r = runs_[static_cast<size_t>(id)];
  if (r.phase != JobPhase::kRunning || r.token != token) return;  // finished meanwhile
  (void)PreemptNow(id, true);
}

Status Simulator::PreemptNow(JobId id, bool checkpointed) {
  const Job& j = job(id);
  JobRun& r = runs_[static_cast<size_t>(id)];
  if (r.phase != JobPhase::kRunning) return FailedPreconditionError(fmt::format("job {} is not running", j.name));
  const double elapsed = now_ - r.attempt_start;
  const double saved = checkpointed ? elapsed
                       : j.checkpoint_interval > 0 ? std::floor(elapsed / j.checkpoint_interval) * j.checkpoint_interval
                                                   : 0;
  r.remaining = std::max(0.0, r.remaining - saved);
  r.lost_gpu_seconds += (elapsed - saved) * JobGpus(j);
  if (elapsed > saved) r.lost_by_model[ModelOf(id)] += (elapsed - saved) * JobGpus(j);
  EndAttempt(id);
  ReleasePods(id);
  alloc_gpus_ -= JobGpus(j);
  busy_gpus_ -= JobGpus(j);
  queues_.AddRunning(QueueOf(id), -QueueGpus(j));
  queues_.AddDemand(QueueOf(id), -QueueGpus(j));  // until it is queued again
  queues_.Preempted(QueueOf(id), r.reclaim);
  r.reclaim = false;
  running_.erase(id);
  ++r.token;
  r.stopping = false;
  ++r.preemptions;
  ++preemptions_;
  ++counted_events_;
  r.phase = JobPhase::kRestarting;
  events_.Push(now_ + config_.restart_overhead_s, EventType::kRestart, id);
  ++real_pending_;
  dirty_ = true;
  ++release_epoch_;
  policy_.OnFinished(*this, id);
  return OkStatus();
}

void Simulator::NoteReclaim(JobId id) {
  JobRun& r = runs_[static_cast<size_t>(id)];
  if (r.phase == JobPhase::kRunning) r.reclaim = true;
}

}  // namespace phalanx::sim
