// The simulator's event loop and job life cycle (simulator.h): construction, submit,
// finish, restart, policy wake-ups. Starting jobs is in simulator_start.cc, preemption in
// simulator_preempt.cc, metrics and the report in simulator_metrics.cc, cost in
// simulator_cost.cc.
#include "sim/engine/simulator.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <map>

#include <fmt/format.h>

#include "sim/engine/job_gpus.h"

namespace phalanx::sim {

Simulator::Simulator(const Workload& workload, placement::ClusterState state, Policy& policy, SimConfig config)
    : Simulator(workload, std::move(state), placement::MigLedger(), policy, std::move(config)) {}

Simulator::Simulator(const Workload& workload, placement::ClusterState state, placement::MigLedger mig, Policy& policy,
                     SimConfig config)
    : workload_(workload), state_(std::move(state)), mig_(std::move(mig)), policy_(policy), config_(std::move(config)) {
  runs_.resize(workload_.jobs.size());
  for (const auto& [name, node] : mig_.nodes()) mig_nodes_.push_back(name);
  std::sort(mig_nodes_.begin(), mig_nodes_.end(), [](const NodeName& a, const NodeName& b) { return a.str() < b.str(); });
  // Pods already bound (a snapshot) hold their GPUs for the whole replay.
  alloc_gpus_ = busy_gpus_ = state_.TotalGpus() - state_.FreeGpus();
  for (const auto& [name, node] : mig_.nodes()) mig_used_ += node.TotalCompute() - node.FreeCompute();
  mig_peak_ = mig_used_;
  // FGD task mix: member shapes weighted by how many members the workload has.
  std::map<std::pair<int, int>, double> mix;
  for (const Job& j : workload_.jobs)
    if (!j.IsMig()) mix[{j.gpus_per_replica, j.milli}] += j.replicas;
  for (const auto& [shape, count] : mix)
    shapes_.push_back(placement::TaskShape{.gpus = shape.first, .milli = shape.second, .popularity = count});
}

PodUid Simulator::MemberPod(JobId id, int member) const {
  return PodUid(fmt::format("j{}-a{}-{}", id, runs_[static_cast<size_t>(id)].attempt, member));
}

std::string Simulator::CheckFitsEmpty(const Job& j) const {
  if (j.IsMig()) {
    int most = 0;
    for (const NodeName& name : mig_nodes_) {
      auto idx = state_.FindNode(name);
      if (j.pool && (!idx || state_.node(*idx).spec.pool != *j.pool)) continue;
      most = std::max(most, mig_.Find(name)->Total(j.mig_profile));
    }
    if (most >= j.gpus_per_replica) return "";
    return fmt::format("needs {} x {}; the most any node's MIG layout has is {}", j.gpus_per_replica,
                       placement::MigResourceName(j.mig_profile), most);
  }
  int best_members = 0;
  std::string best_pool;
  for (placement::PoolId p = 0; p < state_.PoolCount(); ++p) {
    const placement::PoolInfo& info = state_.pool(p);
    if (j.pool && info.name != *j.pool) continue;
    int members = 0;
    for (placement::NodeIndex n : info.nodes) members += placement::GpuCount(state_.node(n).spec.healthy) / j.gpus_per_replica;
    if (members >= j.replicas) return "";
    if (members >= best_members) {
      best_members = members;
      best_pool = info.name;
    }
  }
  if (j.pool && state_.FindPool(*j.pool) == placement::kNoPool)
    return fmt::format("needs GPU model \"{}\", which the cluster does not have", *j.pool);
  return fmt::format("needs {} x {} GPUs; even an empty cluster fits only {} such members (pool \"{}\")", j.replicas,
                     j.gpus_per_replica, best_members, best_pool);
}

void Simulator::Enqueue(JobId id) {
  JobRun& r = runs_[static_cast<size_t>(id)];
  r.phase = JobPhase::kQueued;
  r.queued_since = now_;
  r.pods.assign(static_cast<size_t>(job(id).replicas), PodUid());
  r.bound_at.assign(static_cast<size_t>(job(id).replicas), 0);
  r.bound = 0;
  ++queued_;
  dirty_ = true;
  if (!job(id).IsMig()) ++waiting_by_pool_[job(id).pool.value_or("")];
  queues_.AddDemand(QueueOf(id), QueueGpus(job(id)));
  if (job(id).IsMig()) {
    mig_queue_.emplace(-job(id).priority, mig_seq_++, id);
    return;
  }
  policy_.OnQueued(*this, id);
}

void Simulator::HandleSubmit(JobId id) {
  ++counted_events_;
  JobRun& r = runs_[static_cast<size_t>(id)];
  r.remaining = job(id).duration;
  Enqueue(id);
}

void Simulator::HandleRestart(JobId id) {
  ++counted_events_;
  ++runs_[static_cast<size_t>(id)].attempt;
  Enqueue(id);
}

void Simulator::HandleFinish(JobId id, uint32_t token) {
  JobRun& r = runs_[static_cast<size_t>(id)];
  if (r.phase != JobPhase::kRunning || r.token != token) return;  // preempted attempt
  ++counted_events_;
  EndAttempt(id);
  ReleasePods(id);
  const double g = JobGpus(job(id));
  alloc_gpus_ -= g;
  busy_gpus_ -= g;
  queues_.AddRunning(QueueOf(id), -QueueGpus(job(id)));
  queues_.AddDemand(QueueOf(id), -QueueGpus(job(id)));
  running_.erase(id);
  r.phase = JobPhase::kDone;
  r.finish = now_;
  r.remaining = 0;
  last_activity_ = now_;
  dirty_ = true;
  ++release_epoch_;
  policy_.OnFinished(*this, id);
}

void Simulator::WakeAt(double time) {
  if (time <= now_ || time == last_wake_) return;
  last_wake_ = time;
  events_.Push(time, EventType::kWake);
}

PolicyReport Simulator::Run() {
  const auto wall_start = std::chrono::steady_clock::now();
  const size_t n = workload_.jobs.size();
  for (size_t i = 0; i < n; ++i) {
    const Job& j = workload_.jobs[i];
    std::string why = CheckFitsEmpty(j);
    if (!why.empty()) {
      runs_[i].phase = JobPhase::kNeverFits;
      if (never_fit_.size() < 20) never_fit_.push_back(NeverFit{j.name, j.line, why});
      ++never_fit_count_;
      continue;
    }
    events_.Push(j.submit, EventType::kSubmit, static_cast<JobId>(i));
    ++real_pending_;
  }
  first_submit_ = n ? workload_.jobs.front().submit : 0;
  if (config_.queues.enabled()) {
    // Queue shares are of every GPU, MIG-mode GPUs included (a MIG job counts its devices'
    // fraction of a GPU in its queue).
    int mig_gpus = 0;
    for (placement::NodeIndex k : state_.Nodes()) mig_gpus += std::popcount(state_.node(k).spec.mig);
    queues_ = QueueTracker(config_.queues, state_.TotalGpus() + mig_gpus, first_submit_);
    job_queue_.resize(n);
    for (size_t i = 0; i < n; ++i) {
      job_queue_[i] = queues_.IndexOf(workload_.jobs[i].queue);
      if (runs_[i].phase != JobPhase::kNeverFits) queues_.CountJob(job_queue_[i]);
    }
  }
  const double span = n ? workload_.jobs.back().submit - first_submit_ : 0;
  const double sample_every = std::max(60.0, span / std::max(1, config_.sample_points));
  now_ = first_submit_;
  last_activity_ = first_submit_;
  events_.Push(first_submit_, EventType::kSample);
  size_t submitted = 0, next_progress = n / 100 + 1;

  while (!events_.empty() && real_pending_ > 0) {
    const double t = events_.top().time;
    Advance(t);
    now_ = t;
    while (!events_.empty() && events_.top().time == t) {
      const Event e = events_.Pop();
      switch (e.type) {
        case EventType::kSubmit:
          --real_pending_;
          HandleSubmit(e.job);
          last_activity_ = now_;
          if (++submitted >= next_progress && config_.progress) {
            config_.progress(static_cast<double>(submitted) / static_cast<double>(n));
            next_progress += n / 100 + 1;
          }
          break;
        case EventType::kFinish:
          --real_pending_;
          HandleFinish(e.job, e.token);
          break;
        case EventType::kRestart:
          --real_pending_;
          HandleRestart(e.job);
          break;
        case EventType::kStop:
          --real_pending_;
          HandleStop(e.job, e.token);
          break;
        case EventType::kWake:
          dirty_ = true;
          ++release_epoch_;
          break;
        case EventType::kSample:
          TakeSample();
          events_.Push(now_ + sample_every, EventType::kSample);
          break;
      }
    }
    if (dirty_) {
      dirty_ = false;
      policy_.Schedule(*this);
      if (!mig_queue_.empty()) ScheduleMig();
    }
  }
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return BuildReport(wall);
}

}  // namespace phalanx::sim
