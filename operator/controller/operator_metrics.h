// The operator's Prometheus metrics, declared once (STYLE §2.5) and passed by reference.
// Names follow issue 6 (they take precedence over STYLE's examples). Thread-safe.
#pragma once

#include <map>
#include <mutex>
#include <set>
#include <string>

#include "core/base/result.h"
#include "core/metrics/registry.h"
#include "operator/api/training_job.h"
#include "operator/cost/usage.h"

namespace phalanx::op {

class OperatorMetrics {
 public:
  static Result<std::unique_ptr<OperatorMetrics>> Create(metrics::Registry& registry);

  void ObserveReconcile(double seconds, bool ok);
  void CountRestart(RestartClass c, const std::string& reason);
  void AddLostGpuSeconds(double seconds);
  // A malformed phalanx.io/preempt-request, once per new refusal (condition PreemptRequestRefused).
  void CountPreemptRequestRefused() { preempt_requests_refused_->Inc(); }
  void ObserveTimeToRestart(double seconds);
  // An attempt's pods created -> every member running (the gang's wait for placement).
  void ObserveGangWait(double seconds);
  // Per-job phase, GPUs (replicas x gpusPerReplica) and checkpoint age; gauges aggregate over
  // jobs (bounded labels).
  void SetJob(const std::string& key, Phase phase, double gpus, double checkpoint_age_seconds);
  // Usage a status write persisted (counters by namespace and tier; cost also by currency),
  // and the GPUs of a job's pods idle now (gauge by namespace and tier).
  void AddUsage(const std::string& ns, const std::string& tier, const std::string& currency, const UsageDelta& d);
  void SetIdleGpus(const std::string& key, const std::string& ns, const std::string& tier, double idle_gpus);
  void ForgetJob(const std::string& key);
  void SetQueueDepth(double depth) { queue_depth_->Set(depth); }

 private:
  OperatorMetrics() = default;
  void RefreshLocked();

  struct JobState {
    Phase phase;
    double gpus;
    double checkpoint_age_seconds;
    std::string ns, tier;
    double idle_gpus = 0;
  };

  metrics::GaugeFamily* phase_ = nullptr;
  metrics::GaugeFamily* gpus_ = nullptr;
  metrics::Histogram* gang_wait_ = nullptr;
  metrics::CounterFamily* restarts_ = nullptr;
  metrics::Counter* lost_gpu_seconds_ = nullptr;
  metrics::Counter* preempt_requests_refused_ = nullptr;
  metrics::Gauge* checkpoint_age_ = nullptr;
  metrics::Histogram* time_to_restart_ = nullptr;
  metrics::Histogram* reconcile_duration_ = nullptr;
  metrics::Counter* reconcile_errors_ = nullptr;
  metrics::Counter* reconcile_ok_ = nullptr;
  metrics::Gauge* queue_depth_ = nullptr;
  metrics::CounterFamily* gpu_seconds_ = nullptr;
  metrics::CounterFamily* idle_gpu_seconds_ = nullptr;
  metrics::CounterFamily* cost_ = nullptr;
  metrics::CounterFamily* idle_cost_ = nullptr;
  metrics::GaugeFamily* idle_gpus_ = nullptr;
  std::set<std::pair<std::string, std::string>> idle_series_;  // guarded by mu_

  std::mutex mu_;
  std::map<std::string, JobState> jobs_;  // guarded by mu_
};

}  // namespace phalanx::op
