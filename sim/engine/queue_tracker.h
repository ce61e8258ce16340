// Per-team-queue accounting of one replay (docs/simulator.md, "Queues"): GPUs each queue
// runs and wants over time, time below min(demand, nominal), preemptions and reclaims,
// fair share per 6-hour window and Jain's index. The simulator feeds it the same events
// whatever the policy, so a run without queue enforcement shows what queues would fix.
#pragma once

#include <string>
#include <vector>

#include "core/scheduling/queues.h"
#include "sim/report/report.h"

namespace phalanx::sim {

class QueueTracker {
 public:
  static constexpr double kWindow = 6 * 3600;
  static constexpr double kTolerance = 0.10;

  QueueTracker() = default;  // no queues: every call is a no-op
  QueueTracker(const scheduling::QueueConfig& config, double capacity_gpus, double start);

  bool enabled() const { return !names_.empty(); }
  // The queue a job naming `queue` runs in (unknown -> default), as an index.
  int IndexOf(const std::string& queue) const;

  void AddDemand(int q, double gpus) { Change(demand_, q, gpus); }
  void AddRunning(int q, double gpus) { Change(running_, q, gpus); }
  void CountJob(int q) { if (q >= 0) ++jobs_[static_cast<size_t>(q)]; }
  void Preempted(int q, bool reclaim);
  // Integrates the current usage from `from` to `to`.
  void Advance(double from, double to);
  void FillSample(Sample& s) const;
  void FillReport(PolicyReport& rep, double end) const;

  // Capacity water-filled by `weights`, each capped at its demand (weighted max-min).
  static std::vector<double> FairShares(const std::vector<double>& demand, const std::vector<double>& weights,
                                        double capacity);
  // (sum x)^2 / (n sum x^2); 1 for n = 0.
  static double Jain(const std::vector<double>& x);

 private:
  // Per queue: GPU-seconds run, fair-share GPU-seconds (the instantaneous fair share
  // integrated over time) and seconds with demand.
  struct Window {
    std::vector<double> usage, fair, demand_time;
  };
  void Change(std::vector<double>& v, int q, double gpus) {
    if (q >= 0) v[static_cast<size_t>(q)] += gpus;
  }
  void AddToWindow(size_t w, double dt, const std::vector<double>& fair);

  std::vector<std::string> names_;
  std::vector<double> nominal_, weights_;  // entitlement weights (nominal, or fair-share weight)
  std::vector<double> weight_field_;
  scheduling::QueueLedger resolver_;
  double capacity_ = 0, start_ = 0;
  std::vector<double> running_, demand_;
  std::vector<int> jobs_, preemptions_, reclaimed_;
  std::vector<double> usage_area_, below_time_, below_area_;
  double jain_area_ = 0, contended_time_ = 0;
  std::vector<Window> windows_;
};

}  // namespace phalanx::sim
