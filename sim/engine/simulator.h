// The discrete-event engine (docs/simulator.md, "Engine"). It owns simulated time, the
// GPU ledger (placement::ClusterState, the extender's own accounting) and every job's
// life: submit -> queued -> (members bound) -> running -> finished, with preemption
// sending a job back through restart-from-checkpoint. Policies decide *what* to place
// and *whom* to preempt through the methods below; the engine does the bookkeeping and
// the metrics. Source files: simulator.cc (event loop, job life cycle), simulator_start.cc
// (starting jobs), simulator_preempt.cc, simulator_metrics.cc (metrics, report),
// simulator_cost.cc.
//
// Event loop: pop every event of the next instant, apply it, then (if anything changed)
// ask the policy for one scheduling pass. Single-threaded and deterministic: the same
// workload, cluster, policy and config give the same report (apart from wall-clock
// throughput figures).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <tuple>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/base/result.h"
#include "core/base/status.h"
#include "core/cost/price_table.h"
#include "core/placement/cluster_state.h"
#include "core/placement/fragmentation.h"
#include "core/placement/mig_ledger.h"
#include "core/scheduling/queues.h"
#include "sim/engine/event_queue.h"
#include "sim/engine/queue_tracker.h"
#include "sim/model/job.h"
#include "sim/report/report.h"

namespace phalanx::sim {

class Policy;

// Where a MIG job runs: devices (indexes into the node's MigNode::slices()).
struct MigPlacement {
  NodeName node;
  std::vector<int> devices;
};

struct SimConfig {
  // Seconds between a preemption and the job re-entering the queue (the operator
  // deletes the old attempt, waits for it to be gone, re-creates the gang).
  double restart_overhead_s = 30;
  // Graceful preemption of jobs that checkpoint (TrainingJob preempt-request, docs/architecture.md
  // §2.4): told to checkpoint, they stop this many seconds later having lost nothing,
  // and hold their GPUs until then. 0 = every preemption is immediate (work since the
  // last periodic checkpoint is lost).
  double graceful_notice_s = 60;
  int sample_points = 400;  // timeline resolution
  // Team queues of the cluster description: usage per queue is reported for every
  // policy (only the phalanx policy enforces them).
  scheduling::QueueConfig queues;
  // --prices: the report prices GPU-hours per tier and queue and lost work (docs/simulator.md "Cost").
  std::optional<cost::PriceTable> prices;
  // Called about every 1% of submitted jobs with the fraction done (progress bar).
  std::function<void(double)> progress;
  // --jobs-csv: fill PolicyReport::job_results (one row per job, built once at the end).
  bool job_results = false;
  // Node group of each node (SimCluster::node_groups) for those rows; a node not in it
  // (a snapshot's) stands for itself.
  std::unordered_map<NodeName, std::string> node_groups;
};

enum class JobPhase : uint8_t { kPending, kQueued, kRunning, kRestarting, kDone, kNeverFits };

struct JobRun {
  JobPhase phase = JobPhase::kPending;
  int attempt = 0;
  double remaining = 0;  // seconds of work left (restored to the last checkpoint on preemption)
  double queued_since = 0;
  double queue_time = 0;  // total over attempts
  double attempt_start = -1;
  double first_start = -1;
  double finish = -1;
  int preemptions = 0;
  double lost_gpu_seconds = 0;
  // GPU-seconds held (bound, whether running or waiting for siblings) and lost to preemption,
  // per GPU model (node group gpuModel); MIG devices count slices/7 (cost, docs/simulator.md).
  std::map<std::string, double> held_by_model, lost_by_model;
  uint32_t token = 0;  // invalidates the finish event of a preempted attempt
  // Members bound in the current attempt (index = member; empty uid = not bound).
  std::vector<PodUid> pods;
  std::vector<double> bound_at;
  int bound = 0;
  bool ever_partial = false;
  bool backfilled = false;  // the current attempt was admitted as backfill
  // The member nodes of the attempt that ran last, by member (set when it starts; kept
  // after it ends).
  std::vector<NodeName> nodes;
  bool stopping = false;    // told to checkpoint and stop (graceful preemption)
  bool reclaim = false;     // the pending preemption returns another queue's nominal quota
};

class Simulator {
 public:
  Simulator(const Workload& workload, placement::ClusterState state, Policy& policy, SimConfig config = {});
  // With MIG devices (cluster descriptions with `mig:` layouts, snapshots).
  Simulator(const Workload& workload, placement::ClusterState state, placement::MigLedger mig, Policy& policy,
            SimConfig config = {});

  // Replays the whole workload and returns the report (policy name, metrics).
  PolicyReport Run();

  // --- for policies --------------------------------------------------------------
  double now() const { return now_; }
  const placement::ClusterState& state() const { return state_; }
  const placement::MigLedger& mig() const { return mig_; }
  // Nodes with MIG devices, in name order (deterministic scans).
  const std::vector<NodeName>& mig_nodes() const { return mig_nodes_; }
  const Job& job(JobId id) const { return workload_.jobs[static_cast<size_t>(id)]; }
  const JobRun& run(JobId id) const { return runs_[static_cast<size_t>(id)]; }
  // Running jobs, ascending id.
  const std::set<JobId>& running() const { return running_; }
  // Every whole-GPU shape in the workload (FGD fragmentation's task mix).
  std::span<const placement::TaskShape> task_shapes() const { return shapes_; }

  // Places every member at once and starts the job. FailedPrecondition if the job is
  // not queued or a member's GPUs are not free.
  Status StartJob(JobId id, std::span<const placement::MemberPlacement> members);
  // Binds one member (per-pod policies). The job starts when its last member binds.
  Status BindMember(JobId id, int member, const placement::MemberPlacement& placement);
  // Binds a one-GPU share (openb gpu_milli pods) and starts the job.
  Status StartShare(JobId id, const NodeName& node, int gpu);
  // Starts a MIG job on `placement`'s devices. FailedPrecondition if the job is not a
  // queued MIG job or a device is held.
  Status StartMig(JobId id, const MigPlacement& placement);
  // Evicts a running job: its pods are released, the work since its last checkpoint is
  // lost, and it re-enters the queue after restart_overhead_s.
  Status Preempt(JobId id);
  // Work (GPU-seconds) a preemption right now would lose.
  double GpuSecondsAtRisk(JobId id) const;
  // Graceful preemption: a running job that checkpoints is told to checkpoint and stop;
  // it stops (as Preempt, losing nothing) config().graceful_notice_s later, holding its
  // GPUs meanwhile. Returns the notice; 0 when graceful preemption does not apply (the
  // job never checkpoints, or the notice is 0): then nothing happened, call Preempt.
  // FailedPrecondition if the job is not running.
  Result<double> RequestGracefulStop(JobId id);
  const SimConfig& config() const { return config_; }
  // The running attempt was admitted as backfill (counted in backfilled GPU-hours).
  void NoteBackfill(JobId id);
  // The attempt that just finished ran longer than the policy expected (report: hint overruns).
  void NoteHintOverrun() { ++hint_overruns_; }
  // The preemption the policy is about to ask for gives GPUs back to another team queue
  // (counted as a reclaim in the report).
  void NoteReclaim(JobId id);
  // Bumped whenever GPUs are released (finish, preemption) or a policy timer fires:
  // between two equal values only new arrivals can change what fits.
  uint64_t release_epoch() const { return release_epoch_; }
  // Asks for a scheduling pass at `time` (policy timers).
  void WakeAt(double time);
  // Pod id of member `member` of the current attempt.
  PodUid MemberPod(JobId id, int member) const;

 private:
  void ScheduleMig();  // MIG jobs: their own queue, placed by Policy::PlaceMig
  void ReleasePods(JobId id);  // whole GPUs, shares or MIG devices of the current attempt
  void HandleSubmit(JobId id);
  void HandleFinish(JobId id, uint32_t token);
  void HandleRestart(JobId id);
  void HandleStop(JobId id, uint32_t token);
  Status PreemptNow(JobId id, bool checkpointed);
  void Enqueue(JobId id);
  void Advance(double t);  // integrates utilisation up to t
  void EndAttempt(JobId id);  // bookkeeping shared by finish and preemption
  double IdleWhileWaiting() const;  // free GPUs that a waiting whole-GPU job could want
  void TakeSample();
  void BecomeRunning(JobId id);
  void RecordTopology(JobId id);
  // Cost accounting (simulator_cost.cc): adds the GPU-seconds each bound member of `id`
  // held until `until` to `into` (per GPU model); ModelOf is the model of its first bound
  // member (lost work); FillCost sets the report's per-tier and per-queue GPU-hours and,
  // with config_.prices, their cost.
  void AccountHeld(JobId id, double until, std::map<std::string, double>& into) const;
  std::string ModelOf(JobId id) const;
  void FillCost(PolicyReport& rep, double end) const;
  std::string CheckFitsEmpty(const Job& job) const;  // "" if it fits an empty cluster
  PolicyReport BuildReport(double wall_seconds);
  std::vector<JobResult> JobResults(double end) const;  // config_.job_results

  const Workload& workload_;
  placement::ClusterState state_;
  placement::MigLedger mig_;
  std::vector<NodeName> mig_nodes_;
  // Queued MIG jobs in (priority desc, arrival) order.
  std::set<std::tuple<int, uint64_t, JobId>> mig_queue_;
  uint64_t mig_seq_ = 0;
  Policy& policy_;
  SimConfig config_;
  EventQueue events_;
  std::vector<JobRun> runs_;
  std::set<JobId> running_;
  std::vector<placement::TaskShape> shapes_;
  double now_ = 0;
  bool dirty_ = false;
  int64_t real_pending_ = 0;  // submit/finish/restart events outstanding
  int queued_ = 0;
  double last_wake_ = -1;
  uint64_t release_epoch_ = 0;
  // Metrics.
  uint64_t counted_events_ = 0;
  double alloc_gpus_ = 0, busy_gpus_ = 0;
  double alloc_area_ = 0, busy_area_ = 0;
  int mig_used_ = 0, mig_peak_ = 0;  // compute slices held by MIG jobs
  double mig_area_ = 0;
  double first_submit_ = 0, last_activity_ = 0;
  double idle_held_gpu_seconds_ = 0;
  double idle_waiting_area_ = 0;    // GPU-seconds free while a job of that pool waited
  double backfill_gpu_seconds_ = 0;
  std::map<std::string, int> waiting_by_pool_;  // queued whole-GPU jobs; "" = any pool
  int partial_gangs_ = 0;
  int preemptions_ = 0;
  int hint_overruns_ = 0;
  double topo_ratio_sum_ = 0;
  int topo_members_ = 0;
  int multi_node_started_ = 0, multi_node_one_rack_ = 0;
  std::vector<Sample> timeline_;
  std::vector<NeverFit> never_fit_;
  int never_fit_count_ = 0;
  std::unordered_map<uint64_t, double> ratio_cache_;
  QueueTracker queues_;
  std::vector<int> job_queue_;  // QueueTracker index by job (-1: no queues)
  int QueueOf(JobId id) const { return job_queue_.empty() ? -1 : job_queue_[static_cast<size_t>(id)]; }
};

// Policy interface: see sim/policy/policies.h for the four policies.
class Policy {
 public:
  virtual ~Policy() = default;
  virtual std::string name() const = 0;
  // A job entered the queue (submitted, or restarted after a preemption).
  virtual void OnQueued(Simulator& sim, JobId id) = 0;
  // A running job finished (its GPUs are free again).
  virtual void OnFinished(Simulator& /*sim*/, JobId /*id*/) {}
  // One scheduling pass at sim.now(), after every event of that instant was applied.
  virtual void Schedule(Simulator& sim) = 0;
  // Where a queued MIG job would run now (nullopt: nowhere). MIG jobs never reach
  // OnQueued/Schedule: their capacity (GPUs in MIG mode) is disjoint from whole GPUs,
  // so the engine queues them apart (priority, then FIFO) and asks this each pass. The
  // default places nothing (every shipped policy overrides it).
  virtual std::optional<MigPlacement> PlaceMig(const Simulator& /*sim*/, JobId /*id*/) { return std::nullopt; }
};

}  // namespace phalanx::sim
