// What one policy's replay produced (docs/simulator.md, "Report"). Plain data: the
// simulator fills it, the table/JSON/HTML writers render it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/cost/price_table.h"

namespace phalanx::sim {

struct Distribution {
  int count = 0;
  double mean = 0, p50 = 0, p95 = 0, p99 = 0, max = 0;
};
// Nearest-rank percentiles of `values` (sorted in place).
Distribution Summarize(std::vector<double>& values);

struct TierReport {
  std::string tier;
  int priority = 0;
  int jobs = 0;
  int completed = 0;
  Distribution queueing_delay_s;  // completed jobs: total time queued over all attempts
  Distribution jct_s;             // completed jobs: finish - submit
  int preemptions = 0;
  double lost_gpu_hours = 0;
  // Cost (docs/simulator.md "Cost"): GPU-hours its jobs held (bound, running or waiting for
  // siblings; a MIG device counts slices/7), per GPU model (node group gpuModel) and in all;
  // lost GPU-hours per model; with --prices, what they cost (tier multiplier applied).
  double gpu_hours = 0;
  std::map<std::string, double> gpu_hours_by_model, lost_gpu_hours_by_model;
  double cost = 0, lost_cost = 0;
};

struct Sample {
  double time = 0;
  double allocated_gpus = 0;  // held by pods (running or waiting for siblings)
  double busy_gpus = 0;       // held by running jobs
  int queued_jobs = 0;
  int mig_used_slices = 0;  // MIG compute slices held
  double fragmented_gpus = 0;  // FGD, over the workload's task shapes
  double fragmentation_ratio = 0;
  // Team queues (when the cluster defines them), by PolicyReport::queues index.
  std::vector<double> queue_gpus;    // GPUs its running jobs hold
  std::vector<double> queue_demand;  // ... plus those its queued jobs ask for
};

// One team queue over the replay (docs/simulator.md, "Queues").
struct QueueReport {
  std::string name;
  double nominal_gpus = 0;  // over all pools
  double weight = 1;
  int jobs = 0;
  double gpu_hours = 0;         // run by its jobs
  double mean_share = 0;        // of the cluster's GPUs, over the replay
  // Time its running GPUs were below min(demand, nominal), and the GPU-hours missing.
  double hours_below_entitlement = 0;
  double gpu_hours_below_entitlement = 0;
  int preemptions = 0;          // of its jobs, any cause
  int reclaimed = 0;            // of its jobs, to return another queue's nominal quota
  double worst_window_deviation = 0;  // |share - fair share| / fair share, worst 6-h window
  // Cost: GPU-hours its jobs held (as TierReport::gpu_hours) and lost; with --prices, their cost.
  double held_gpu_hours = 0, lost_gpu_hours = 0;
  double cost = 0, lost_cost = 0;
};

// One 6-hour window in which at least two queues had demand throughout: each such queue's
// mean GPUs, mean fair share and deviation.
struct WindowReport {
  struct Queue {
    std::string name;
    double gpus = 0, fair_share = 0, deviation = 0;
  };
  double start_hours = 0;  // since the first submit
  std::vector<Queue> queues;
};

struct FairnessReport {
  // Jain's index over queues with demand of (GPUs run / fair share), time-weighted over
  // the time at least two queues had demand; fair share = capacity water-filled by
  // nominal quota (weights when no quotas), each queue capped at its demand, at each
  // instant (a window's fair share is the time average of it).
  double jain_index = 1;
  double contended_hours = 0;  // time at least two queues had demand
  int windows = 0;             // 6-hour windows in which at least two queues had demand throughout
  int windows_within_10pct = 0;  // ... in which every such queue was within 10% of its fair share
  double worst_window_deviation = 0;
  std::vector<WindowReport> contended_windows;  // the `windows` counted, in time order
  int reclaim_preemptions = 0;
  double reclaims_per_job = 0;
};

struct NeverFit {
  std::string job;
  int line = 0;
  std::string reason;
};

// How a job's replay ended (simulator_metrics.cc classifies them as the report counts them).
enum class JobOutcome : uint8_t { kDone, kUnfinished, kNeverFits };

// One job under one policy: the rows of --jobs-csv (docs/simulator.md "Per-job results").
// Times are seconds since the trace start; -1 = never.
struct JobResult {
  int job = 0;  // id: index in submit order (the same job under every policy)
  std::string name, tier, queue;
  std::string pool;  // the pool the job requires; "" = any pool
  int members = 1, gpus_per_member = 1;
  std::string mig_profile;
  double submit = 0;
  // Over all attempts; for a job still queued at the end, its wait until then too.
  double queueing_s = 0;
  double first_start = -1, finish = -1;
  int preemptions = 0;
  double lost_gpu_hours = 0;
  // Node group of the node its first member ran on in its last attempt that ran; for a
  // snapshot cluster (no node groups) the node's name; "" = never ran.
  std::string first_node_group;
  JobOutcome outcome = JobOutcome::kUnfinished;
};

struct PolicyReport {
  std::string policy;
  int jobs = 0;
  int completed = 0;
  int never_fit = 0;
  int unfinished = 0;  // still queued or partially placed when nothing else could happen
  double makespan_s = 0;
  double total_gpus = 0;
  double gpu_utilisation = 0;   // busy GPU-time / (GPUs x makespan)
  double gpu_allocation = 0;    // allocated GPU-time / (GPUs x makespan)
  double mean_fragmentation_ratio = 0;  // mean over samples with queued jobs
  double mean_fragmented_gpus = 0;
  // Gangs: members bound while siblings wait (k8s-default).
  int partial_gangs = 0;           // gangs that ever held GPUs before all members bound
  double idle_held_gpu_hours = 0;  // GPU time held by bound members of not-yet-running gangs
  int deadlocked_gangs = 0;        // partially bound at the end, never started
  int preemptions = 0;
  double preemptions_per_job = 0;
  double lost_gpu_hours = 0;
  // GPU time free in a pool while a whole-GPU job that needs that pool waited (GPUs a
  // waiting gang could not use: too few, wrong shape, or held back for a head).
  double idle_while_waiting_gpu_hours = 0;
  double backfilled_gpu_hours = 0;  // run by jobs admitted as backfill behind a head
  // Attempts that ran longer than the run time the policy expected for them (its hint or
  // tier default; phalanx only): each one made a reservation re-forecast.
  int hint_overruns = 0;
  // Mean queueing delay of completed whole-GPU jobs, each weighted by its GPUs.
  double gpu_weighted_queueing_delay_s = 0;
  // Placement quality of multi-GPU members: mean ring bandwidth / best on that node.
  double mean_topology_ratio = 1;
  int multi_node_gangs_started = 0;
  int multi_node_gangs_in_one_rack = 0;
  // MIG: jobs requesting nvidia.com/mig-<profile> (the rest of the report counts whole
  // GPUs only; GPUs in MIG mode are not in total_gpus).
  int mig_jobs = 0;
  int mig_completed = 0;
  int mig_compute_slices = 0;     // in the cluster
  int mig_peak_used_slices = 0;
  double mig_allocation = 0;      // held slice-time / (slices x makespan)
  // Simulator throughput (wall-clock dependent; excluded from determinism checks).
  uint64_t events = 0;
  double wall_seconds = 0;
  double events_per_second = 0;
  // --prices: cost of the GPU-hours held (all tiers) and of the lost work.
  bool priced = false;
  std::string currency;
  double cost = 0, lost_cost = 0;
  std::vector<TierReport> tiers;
  std::vector<QueueReport> queues;  // empty: the cluster defines no queues
  FairnessReport fairness;
  std::vector<Sample> timeline;
  std::vector<NeverFit> never_fit_jobs;  // first 20
  // Every job, in id order, when SimConfig::job_results asked for them (--jobs-csv); the
  // table, JSON and HTML writers never show them (the JSON report keeps its size).
  std::vector<JobResult> job_results;
};

struct SimulationReport {
  std::string cluster;
  int cluster_nodes = 0;
  int cluster_gpus = 0;
  std::string trace;
  std::string trace_format;
  int jobs = 0;
  uint64_t seed = 0;
  std::vector<std::string> notes;
  std::optional<cost::PriceTable> prices;  // --prices (the JSON report carries it as "prices")
  std::vector<PolicyReport> policies;
};

}  // namespace phalanx::sim
