#include "sim/engine/simulator.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "core/placement/device_set_cache.h"
#include "sim/cluster/cluster_spec.h"

namespace phalanx::sim {
namespace {

// Whole-GPU equivalents a job holds (GPUs in MIG mode are counted apart, in slices).
double JobGpus(const Job& j) {
  if (j.IsMig()) return 0;
  return j.IsShare() ? j.milli / 1000.0 : static_cast<double>(j.TotalGpus());
}

}  // namespace

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

void Simulator::Advance(double t) {
  if (t <= now_) return;
  const double dt = t - now_;
  alloc_area_ += alloc_gpus_ * dt;
  busy_area_ += busy_gpus_ * dt;
  mig_area_ += mig_used_ * dt;
  queues_.Advance(now_, t);
  if (!waiting_by_pool_.empty()) idle_waiting_area_ += IdleWhileWaiting() * dt;
}

double Simulator::IdleWhileWaiting() const {
  if (waiting_by_pool_.contains("")) return state_.FreeGpus();
  double idle = 0;
  for (const auto& [pool, count] : waiting_by_pool_) {
    const placement::PoolId id = state_.FindPool(pool);
    if (id != placement::kNoPool) idle += state_.pool(id).free_gpus;
  }
  return idle;
}

void Simulator::NoteBackfill(JobId id) {
  JobRun& r = runs_[static_cast<size_t>(id)];
  if (r.phase == JobPhase::kRunning) r.backfilled = true;
}

void Simulator::NoteReclaim(JobId id) {
  JobRun& r = runs_[static_cast<size_t>(id)];
  if (r.phase == JobPhase::kRunning) r.reclaim = true;
}

void Simulator::EndAttempt(JobId id) {
  JobRun& r = runs_[static_cast<size_t>(id)];
  if (r.backfilled) backfill_gpu_seconds_ += (now_ - r.attempt_start) * JobGpus(job(id));
  r.backfilled = false;
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
  queues_.AddDemand(QueueOf(id), JobGpus(job(id)));
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
  queues_.AddRunning(QueueOf(id), -g);
  queues_.AddDemand(QueueOf(id), -g);
  running_.erase(id);
  r.phase = JobPhase::kDone;
  r.finish = now_;
  r.remaining = 0;
  last_activity_ = now_;
  dirty_ = true;
  ++release_epoch_;
  policy_.OnFinished(*this, id);
}

void Simulator::RecordTopology(JobId id) {
  const Job& j = job(id);
  const JobRun& r = runs_[static_cast<size_t>(id)];
  std::vector<placement::NodeIndex> nodes;
  for (const PodUid& pod : r.pods) {
    const placement::PodAllocation* a = state_.FindPod(pod);
    if (!a) continue;
    nodes.push_back(a->node);
    if (j.gpus_per_replica < 2 || j.IsShare()) continue;
    const placement::NodeState& ns = state_.node(a->node);
    if (!ns.spec.bandwidth) continue;
    const uint64_t key = (reinterpret_cast<uintptr_t>(ns.spec.bandwidth.get()) * 1315423911ULL) ^ a->gpus;
    auto it = ratio_cache_.find(key);
    if (it == ratio_cache_.end()) {
      const std::vector<int> gpus = placement::GpuList(a->gpus);
      const double ring = placement::RingBottleneck(*ns.spec.bandwidth, gpus);
      const double ratio = placement::TopologyRatio(ns.spec.bandwidth, ns.spec.healthy, static_cast<int>(gpus.size()), ring);
      it = ratio_cache_.emplace(key, ratio).first;
    }
    topo_ratio_sum_ += it->second;
    ++topo_members_;
  }
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  if (nodes.size() > 1) {
    ++multi_node_started_;
    const std::string& rack = state_.node(nodes.front()).spec.domains[kLevelRack];
    bool one_rack = !rack.empty();
    for (placement::NodeIndex n : nodes) one_rack = one_rack && state_.node(n).spec.domains[kLevelRack] == rack;
    if (one_rack) ++multi_node_one_rack_;
  }
}

void Simulator::BecomeRunning(JobId id) {
  JobRun& r = runs_[static_cast<size_t>(id)];
  const Job& j = job(id);
  ++counted_events_;
  --queued_;
  if (!j.IsMig()) {
    auto w = waiting_by_pool_.find(j.pool.value_or(""));
    if (w != waiting_by_pool_.end() && --w->second == 0) waiting_by_pool_.erase(w);
  }
  r.phase = JobPhase::kRunning;
  r.queue_time += now_ - r.queued_since;
  r.attempt_start = now_;
  if (r.first_start < 0) r.first_start = now_;
  // Members bound earlier than now held their GPUs idle while siblings waited.
  bool waited = false;
  for (size_t m = 0; m < r.pods.size(); ++m)
    if (r.bound_at[m] < now_) {
      idle_held_gpu_seconds_ += (now_ - r.bound_at[m]) * j.gpus_per_replica;
      waited = true;
    }
  if (waited && !r.ever_partial) {
    r.ever_partial = true;
    ++partial_gangs_;
  }
  running_.insert(id);
  r.nodes.clear();
  for (const PodUid& pod : r.pods) {
    const placement::PodAllocation* a = state_.FindPod(pod);
    r.nodes.push_back(a ? state_.node(a->node).spec.name : NodeName());
  }
  busy_gpus_ += JobGpus(j);
  queues_.AddRunning(QueueOf(id), JobGpus(j));
  RecordTopology(id);
  events_.Push(now_ + r.remaining, EventType::kFinish, id, r.token);
  ++real_pending_;
}

Status Simulator::StartJob(JobId id, std::span<const placement::MemberPlacement> members) {
  const Job& j = job(id);
  JobRun& r = runs_[static_cast<size_t>(id)];
  if (r.phase != JobPhase::kQueued || r.bound != 0)
    return FailedPreconditionError(fmt::format("job {} is not queued with nothing bound", j.name));
  if (static_cast<int>(members.size()) != j.replicas)
    return InvalidArgumentError(fmt::format("job {} has {} members, got {} placements", j.name, j.replicas, members.size()));
  for (size_t m = 0; m < members.size(); ++m) {
    PodUid pod = MemberPod(id, static_cast<int>(m));
    Status s = state_.Allocate(pod, members[m].node, members[m].gpus, j.priority);
    if (!s.ok()) {
      for (size_t k = 0; k < m; ++k) (void)state_.Release(r.pods[k]);
      std::fill(r.pods.begin(), r.pods.end(), PodUid());
      return s;
    }
    r.pods[m] = std::move(pod);
    r.bound_at[m] = now_;
  }
  r.bound = j.replicas;
  alloc_gpus_ += JobGpus(j);
  BecomeRunning(id);
  return OkStatus();
}

Status Simulator::StartShare(JobId id, const NodeName& node, int gpu) {
  const Job& j = job(id);
  JobRun& r = runs_[static_cast<size_t>(id)];
  if (r.phase != JobPhase::kQueued || !j.IsShare())
    return FailedPreconditionError(fmt::format("job {} is not a queued GPU share", j.name));
  PodUid pod = MemberPod(id, 0);
  PHX_RETURN_IF_ERROR(state_.AllocateShare(pod, node, gpu, j.milli, j.priority));
  r.pods[0] = std::move(pod);
  r.bound_at[0] = now_;
  r.bound = 1;
  alloc_gpus_ += JobGpus(j);
  BecomeRunning(id);
  return OkStatus();
}

Status Simulator::BindMember(JobId id, int member, const placement::MemberPlacement& p) {
  const Job& j = job(id);
  JobRun& r = runs_[static_cast<size_t>(id)];
  if (r.phase != JobPhase::kQueued) return FailedPreconditionError(fmt::format("job {} is not queued", j.name));
  if (member < 0 || member >= j.replicas || !r.pods[static_cast<size_t>(member)].empty())
    return FailedPreconditionError(fmt::format("job {} member {} is already bound or out of range", j.name, member));
  PodUid pod = MemberPod(id, member);
  PHX_RETURN_IF_ERROR(state_.Allocate(pod, p.node, p.gpus, j.priority));
  ++counted_events_;  // a bind
  r.pods[static_cast<size_t>(member)] = std::move(pod);
  r.bound_at[static_cast<size_t>(member)] = now_;
  ++r.bound;
  alloc_gpus_ += j.gpus_per_replica;
  if (r.bound < j.replicas) return OkStatus();
  BecomeRunning(id);
  return OkStatus();
}

Status Simulator::StartMig(JobId id, const MigPlacement& p) {
  const Job& j = job(id);
  JobRun& r = runs_[static_cast<size_t>(id)];
  if (r.phase != JobPhase::kQueued || !j.IsMig())
    return FailedPreconditionError(fmt::format("job {} is not a queued MIG job", j.name));
  const placement::MigNode* node = mig_.Find(p.node);
  if (!node) return NotFoundError(fmt::format("node {} has no MIG devices", p.node.str()));
  if (static_cast<int>(p.devices.size()) != j.gpus_per_replica)
    return InvalidArgumentError(fmt::format("job {} wants {} MIG devices, got {}", j.name, j.gpus_per_replica, p.devices.size()));
  for (int d : p.devices) {
    if (d < 0 || static_cast<size_t>(d) >= node->slices().size() || node->slices()[static_cast<size_t>(d)].profile != j.mig_profile)
      return InvalidArgumentError(fmt::format("job {}: device {} on {} is not a {} device", j.name, d, p.node.str(), j.mig_profile));
  }
  PodUid pod = MemberPod(id, 0);
  PHX_RETURN_IF_ERROR(mig_.Allocate(pod, p.node, p.devices));
  for (int d : p.devices) mig_used_ += node->slices()[static_cast<size_t>(d)].compute_slices;
  mig_peak_ = std::max(mig_peak_, mig_used_);
  r.pods[0] = std::move(pod);
  r.bound_at[0] = now_;
  r.bound = 1;
  BecomeRunning(id);
  return OkStatus();
}

void Simulator::ReleasePods(JobId id) {
  AccountHeld(id, now_, runs_[static_cast<size_t>(id)].held_by_model);
  for (const PodUid& pod : runs_[static_cast<size_t>(id)].pods) {
    if (pod.empty()) continue;
    if (const placement::MigHolding* h = mig_.FindPod(pod)) {
      const placement::MigNode* node = mig_.Find(h->node);
      for (int d : h->devices) mig_used_ -= node->slices()[static_cast<size_t>(d)].compute_slices;
      (void)mig_.Release(pod);
      continue;
    }
    (void)state_.Release(pod);
  }
}

void Simulator::ScheduleMig() {
  // A (profile, count, pool) that found no room stays without room for the rest of the
  // pass: MIG capacity only shrinks while a pass places work.
  std::set<std::tuple<std::string, int, std::string>> failed;
  for (auto it = mig_queue_.begin(); it != mig_queue_.end();) {
    const JobId id = std::get<2>(*it);
    const Job& j = job(id);
    auto shape = std::make_tuple(j.mig_profile, j.gpus_per_replica, j.pool.value_or("*"));
    if (failed.contains(shape)) {
      ++it;
      continue;
    }
    std::optional<MigPlacement> p = policy_.PlaceMig(*this, id);
    if (p && StartMig(id, *p).ok()) {
      it = mig_queue_.erase(it);
      continue;
    }
    failed.insert(std::move(shape));
    ++it;
  }
}

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
  queues_.AddRunning(QueueOf(id), -JobGpus(j));
  queues_.AddDemand(QueueOf(id), -JobGpus(j));  // until it is queued again
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

void Simulator::WakeAt(double time) {
  if (time <= now_ || time == last_wake_) return;
  last_wake_ = time;
  events_.Push(time, EventType::kWake);
}

void Simulator::TakeSample() {
  Sample s;
  s.time = now_;
  s.allocated_gpus = alloc_gpus_;
  s.busy_gpus = busy_gpus_;
  s.queued_jobs = queued_;
  s.mig_used_slices = mig_used_;
  const placement::FragmentationReport f = placement::ClusterFragmentation(state_, shapes_);
  s.fragmented_gpus = f.fragmented_gpus;
  s.fragmentation_ratio = f.ratio;
  queues_.FillSample(s);
  timeline_.push_back(s);
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
    queues_ = QueueTracker(config_.queues, state_.TotalGpus(), first_submit_);
    job_queue_.resize(n);
    for (size_t i = 0; i < n; ++i) {
      job_queue_[i] = queues_.IndexOf(workload_.jobs[i].queue);
      if (runs_[i].phase != JobPhase::kNeverFits && !workload_.jobs[i].IsMig()) queues_.CountJob(job_queue_[i]);
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

PolicyReport Simulator::BuildReport(double wall_seconds) {
  PolicyReport rep;
  rep.policy = policy_.name();
  rep.jobs = static_cast<int>(workload_.jobs.size());
  rep.never_fit = never_fit_count_;
  rep.never_fit_jobs = never_fit_;
  rep.total_gpus = state_.TotalGpus();
  rep.mig_compute_slices = mig_.TotalCompute();
  rep.mig_peak_used_slices = mig_peak_;
  const double end = last_activity_;
  rep.makespan_s = end - first_submit_;
  std::map<int, TierReport> tiers;
  std::map<int, std::vector<double>> delays, jcts;
  double lost = 0;
  double weighted_delay = 0, weighted_gpus = 0;  // completed whole-GPU work, by GPUs
  for (size_t i = 0; i < runs_.size(); ++i) {
    const Job& j = workload_.jobs[i];
    const JobRun& r = runs_[i];
    if (r.phase == JobPhase::kNeverFits) continue;
    if (j.IsMig()) {
      ++rep.mig_jobs;
      if (r.phase == JobPhase::kDone) ++rep.mig_completed;
    }
    TierReport& t = tiers[j.priority];
    t.tier = j.tier;
    t.priority = j.priority;
    ++t.jobs;
    t.preemptions += r.preemptions;
    t.lost_gpu_hours += r.lost_gpu_seconds / 3600;
    lost += r.lost_gpu_seconds;
    if (r.phase == JobPhase::kDone) {
      ++rep.completed;
      ++t.completed;
      weighted_delay += r.queue_time * JobGpus(j);
      weighted_gpus += JobGpus(j);
      delays[j.priority].push_back(r.queue_time);
      jcts[j.priority].push_back(r.finish - j.submit);
    } else {
      ++rep.unfinished;
      if (r.bound > 0 && r.phase == JobPhase::kQueued) {
        ++rep.deadlocked_gangs;
        if (!r.ever_partial) ++partial_gangs_;
        for (size_t m = 0; m < r.pods.size(); ++m)
          if (!r.pods[m].empty() && end > r.bound_at[m]) idle_held_gpu_seconds_ += (end - r.bound_at[m]) * j.gpus_per_replica;
      }
    }
  }
  for (auto it = tiers.rbegin(); it != tiers.rend(); ++it) {
    it->second.queueing_delay_s = Summarize(delays[it->first]);
    it->second.jct_s = Summarize(jcts[it->first]);
    rep.tiers.push_back(it->second);
  }
  if (rep.makespan_s > 0 && rep.total_gpus > 0) {
    rep.gpu_utilisation = busy_area_ / (rep.total_gpus * rep.makespan_s);
    rep.gpu_allocation = alloc_area_ / (rep.total_gpus * rep.makespan_s);
  }
  if (rep.makespan_s > 0 && rep.mig_compute_slices > 0)
    rep.mig_allocation = mig_area_ / (rep.mig_compute_slices * rep.makespan_s);
  double frag_ratio = 0, frag_gpus = 0;
  int frag_n = 0;
  for (const Sample& s : timeline_) {
    if (s.time > end) break;
    if (s.queued_jobs == 0) continue;  // fragmentation only matters when work waits
    frag_ratio += s.fragmentation_ratio;
    frag_gpus += s.fragmented_gpus;
    ++frag_n;
  }
  if (frag_n) {
    rep.mean_fragmentation_ratio = frag_ratio / frag_n;
    rep.mean_fragmented_gpus = frag_gpus / frag_n;
  }
  while (!timeline_.empty() && timeline_.back().time > end) timeline_.pop_back();
  // Samples continue after the last submit (until the queue drains): thin the series to
  // about sample_points entries so reports stay small.
  const size_t keep = static_cast<size_t>(std::max(2, config_.sample_points));
  const size_t stride = (timeline_.size() + keep - 1) / keep;
  for (size_t i = 0; i < timeline_.size(); i += std::max<size_t>(1, stride)) rep.timeline.push_back(timeline_[i]);
  rep.partial_gangs = partial_gangs_;
  rep.idle_held_gpu_hours = idle_held_gpu_seconds_ / 3600;
  rep.idle_while_waiting_gpu_hours = idle_waiting_area_ / 3600;
  rep.backfilled_gpu_hours = backfill_gpu_seconds_ / 3600;
  for (size_t i = 0; i < runs_.size(); ++i) {
    const JobRun& r = runs_[i];
    if (r.phase == JobPhase::kRunning && r.backfilled)
      rep.backfilled_gpu_hours += (now_ - r.attempt_start) * JobGpus(workload_.jobs[i]) / 3600;
  }
  rep.preemptions_per_job = rep.jobs > 0 ? static_cast<double>(preemptions_) / rep.jobs : 0;
  rep.gpu_weighted_queueing_delay_s = weighted_gpus > 0 ? weighted_delay / weighted_gpus : 0;
  rep.preemptions = preemptions_;
  rep.lost_gpu_hours = lost / 3600;
  rep.mean_topology_ratio = topo_members_ ? topo_ratio_sum_ / topo_members_ : 1;
  rep.multi_node_gangs_started = multi_node_started_;
  rep.multi_node_gangs_in_one_rack = multi_node_one_rack_;
  queues_.FillReport(rep, end);
  FillCost(rep, end);
  rep.events = counted_events_;
  rep.wall_seconds = wall_seconds;
  rep.events_per_second = wall_seconds > 0 ? static_cast<double>(counted_events_) / wall_seconds : 0;
  return rep;
}

}  // namespace phalanx::sim
