// Metrics of a replay (simulator.h): utilisation integrated over time, GPUs idle while
// work waited, backfilled GPU-hours, the sampled timeline, and the final report.
#include <algorithm>
#include <map>
#include <vector>

#include "core/placement/fragmentation.h"
#include "sim/engine/job_gpus.h"
#include "sim/engine/simulator.h"

namespace phalanx::sim {

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

void Simulator::EndAttempt(JobId id) {
  JobRun& r = runs_[static_cast<size_t>(id)];
  if (r.backfilled) backfill_gpu_seconds_ += (now_ - r.attempt_start) * JobGpus(job(id));
  r.backfilled = false;
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
  rep.hint_overruns = hint_overruns_;
  rep.lost_gpu_hours = lost / 3600;
  rep.mean_topology_ratio = topo_members_ ? topo_ratio_sum_ / topo_members_ : 1;
  rep.multi_node_gangs_started = multi_node_started_;
  rep.multi_node_gangs_in_one_rack = multi_node_one_rack_;
  queues_.FillReport(rep, end);
  FillCost(rep, end);
  if (config_.job_results) rep.job_results = JobResults(end);
  rep.events = counted_events_;
  rep.wall_seconds = wall_seconds;
  rep.events_per_second = wall_seconds > 0 ? static_cast<double>(counted_events_) / wall_seconds : 0;
  return rep;
}

std::vector<JobResult> Simulator::JobResults(double end) const {
  std::vector<JobResult> rows;
  rows.reserve(runs_.size());
  for (size_t i = 0; i < runs_.size(); ++i) {
    const Job& j = workload_.jobs[i];
    const JobRun& r = runs_[i];
    JobResult row{.job = j.id, .name = j.name, .tier = j.tier, .queue = j.queue, .pool = j.pool.value_or(""),
                  .members = j.replicas, .gpus_per_member = j.gpus_per_replica, .mig_profile = j.mig_profile,
                  .submit = j.submit, .queueing_s = r.queue_time, .first_start = r.first_start, .finish = r.finish,
                  .preemptions = r.preemptions, .lost_gpu_hours = r.lost_gpu_seconds / 3600};
    // The outcomes BuildReport counts: never-fit jobs apart, done = completed, else unfinished.
    if (r.phase == JobPhase::kNeverFits) {
      row.outcome = JobOutcome::kNeverFits;
    } else if (r.phase == JobPhase::kDone) {
      row.outcome = JobOutcome::kDone;
    } else {
      row.outcome = JobOutcome::kUnfinished;
      // Still waiting when nothing else could happen: that wait counts too.
      if (r.phase == JobPhase::kQueued) row.queueing_s += std::max(0.0, end - r.queued_since);
    }
    if (!r.nodes.empty() && !r.nodes.front().empty()) {
      auto g = config_.node_groups.find(r.nodes.front());
      row.first_node_group = g != config_.node_groups.end() ? g->second : r.nodes.front().str();
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace phalanx::sim
