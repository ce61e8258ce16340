#include "operator/controller/operator_metrics.h"

#include <algorithm>

#include "core/metrics/buckets.h"

namespace phalanx::op {

Result<std::unique_ptr<OperatorMetrics>> OperatorMetrics::Create(metrics::Registry& registry) {
  std::unique_ptr<OperatorMetrics> m(new OperatorMetrics());
  PHX_ASSIGN_OR_RETURN(m->phase_, registry.AddGauge("phalanx_trainingjob_phase",
                                                    "TrainingJobs per phase.", {"phase"}));
  PHX_ASSIGN_OR_RETURN(m->gpus_, registry.AddGauge("phalanx_trainingjob_gpus",
                                                   "GPUs of TrainingJobs (replicas x gpusPerReplica) per phase.", {"phase"}));
  PHX_ASSIGN_OR_RETURN(m->restarts_, registry.AddCounter("phalanx_trainingjob_restarts_total",
                                                         "Whole-gang restarts by class (Failure, Disruption, Update, Suspend) and reason.",
                                                         {"class", "reason"}));
  PHX_ASSIGN_OR_RETURN(auto lost, registry.AddCounter("phalanx_trainingjob_lost_gpu_seconds_total",
                                                      "GPU-seconds of work lost since the last checkpoint when gangs stopped."));
  PHX_ASSIGN_OR_RETURN(m->lost_gpu_seconds_, lost->WithLabels({}));
  PHX_ASSIGN_OR_RETURN(auto refused, registry.AddCounter("phalanx_trainingjob_preempt_requests_refused_total",
                                                         "Malformed phalanx.io/preempt-request annotations not acted on "
                                                         "(once per new refusal; condition PreemptRequestRefused)."));
  PHX_ASSIGN_OR_RETURN(m->preempt_requests_refused_, refused->WithLabels({}));
  PHX_ASSIGN_OR_RETURN(auto age, registry.AddGauge("phalanx_trainingjob_checkpoint_age_seconds",
                                                   "Oldest last-committed checkpoint among running TrainingJobs."));
  PHX_ASSIGN_OR_RETURN(m->checkpoint_age_, age->WithLabels({}));
  PHX_ASSIGN_OR_RETURN(auto buckets, metrics::ExponentialBuckets(0.05, 2, 14));
  PHX_ASSIGN_OR_RETURN(auto ttr, registry.AddHistogram("phalanx_trainingjob_time_to_restart_seconds",
                                                       "Last pod of the old gang gone -> new gang created.", {}, buckets));
  PHX_ASSIGN_OR_RETURN(m->time_to_restart_, ttr->WithLabels({}));
  PHX_ASSIGN_OR_RETURN(auto wait_buckets, metrics::ExponentialBuckets(0.5, 2, 16));
  PHX_ASSIGN_OR_RETURN(auto gw, registry.AddHistogram("phalanx_trainingjob_gang_wait_seconds",
                                                      "An attempt's pods created -> every member running.", {},
                                                      wait_buckets));
  PHX_ASSIGN_OR_RETURN(m->gang_wait_, gw->WithLabels({}));
  PHX_ASSIGN_OR_RETURN(auto rd, registry.AddHistogram("phalanx_operator_reconcile_duration_seconds",
                                                      "Time to reconcile one TrainingJob, API calls included.", {},
                                                      metrics::DefaultLatencyBuckets()));
  PHX_ASSIGN_OR_RETURN(m->reconcile_duration_, rd->WithLabels({}));
  PHX_ASSIGN_OR_RETURN(auto rt, registry.AddCounter("phalanx_operator_reconcile_total", "Reconciles by result.", {"result"}));
  PHX_ASSIGN_OR_RETURN(m->reconcile_ok_, rt->WithLabels({"success"}));
  PHX_ASSIGN_OR_RETURN(m->reconcile_errors_, rt->WithLabels({"error"}));
  PHX_ASSIGN_OR_RETURN(auto depth, registry.AddGauge("phalanx_operator_workqueue_depth", "Keys waiting in the work queue."));
  PHX_ASSIGN_OR_RETURN(m->queue_depth_, depth->WithLabels({}));
  PHX_ASSIGN_OR_RETURN(m->gpu_seconds_,
                       registry.AddCounter("phalanx_trainingjob_gpu_seconds_total",
                                           "GPU-seconds held by TrainingJob pods (status.usage.gpuSeconds).",
                                           {"namespace", "tier"}));
  PHX_ASSIGN_OR_RETURN(m->idle_gpu_seconds_,
                       registry.AddCounter("phalanx_trainingjob_idle_gpu_seconds_total",
                                           "GPU-seconds held by TrainingJob pods marked phalanx.io/idle-since.",
                                           {"namespace", "tier"}));
  PHX_ASSIGN_OR_RETURN(m->cost_, registry.AddCounter("phalanx_trainingjob_cost_total",
                                                     "Cost of the GPU-seconds held, from the price table.",
                                                     {"namespace", "tier", "currency"}));
  PHX_ASSIGN_OR_RETURN(m->idle_cost_, registry.AddCounter("phalanx_trainingjob_idle_cost_total",
                                                          "Cost of the idle GPU-seconds held.",
                                                          {"namespace", "tier", "currency"}));
  PHX_ASSIGN_OR_RETURN(m->idle_gpus_, registry.AddGauge("phalanx_trainingjob_idle_gpus",
                                                        "GPUs held now by TrainingJob pods marked phalanx.io/idle-since.",
                                                        {"namespace", "tier"}));
  for (Phase p : {Phase::kPending, Phase::kQueued, Phase::kStarting, Phase::kRunning, Phase::kRestarting,
                  Phase::kSuspended, Phase::kSucceeded, Phase::kFailed}) {
    PHX_ASSIGN_OR_RETURN(auto g, m->phase_->WithLabels({std::string(PhaseName(p))}));
    g->Set(0);
    PHX_ASSIGN_OR_RETURN(auto gpus, m->gpus_->WithLabels({std::string(PhaseName(p))}));
    gpus->Set(0);
  }
  return m;
}

void OperatorMetrics::ObserveReconcile(double seconds, bool ok) {
  reconcile_duration_->Observe(seconds);
  (ok ? reconcile_ok_ : reconcile_errors_)->Inc();
}

void OperatorMetrics::CountRestart(RestartClass c, const std::string& reason) {
  auto counter = restarts_->WithLabels({std::string(RestartClassName(c)), reason});
  if (counter.ok()) (*counter)->Inc();
}

void OperatorMetrics::AddLostGpuSeconds(double seconds) { lost_gpu_seconds_->Add(seconds); }
void OperatorMetrics::ObserveTimeToRestart(double seconds) { time_to_restart_->Observe(seconds); }
void OperatorMetrics::ObserveGangWait(double seconds) { gang_wait_->Observe(seconds); }

void OperatorMetrics::SetJob(const std::string& key, Phase phase, double gpus, double checkpoint_age_seconds) {
  std::lock_guard lock(mu_);
  JobState& j = jobs_[key];
  j.phase = phase;
  j.gpus = gpus;
  j.checkpoint_age_seconds = checkpoint_age_seconds;
  RefreshLocked();
}

void OperatorMetrics::AddUsage(const std::string& ns, const std::string& tier, const std::string& currency,
                               const UsageDelta& d) {
  if (d.gpu_seconds > 0) {
    if (auto c = gpu_seconds_->WithLabels({ns, tier}); c.ok()) (*c)->Add(d.gpu_seconds);
  }
  if (d.idle_gpu_seconds > 0) {
    if (auto c = idle_gpu_seconds_->WithLabels({ns, tier}); c.ok()) (*c)->Add(d.idle_gpu_seconds);
  }
  if (currency.empty()) return;
  if (d.cost > 0) {
    if (auto c = cost_->WithLabels({ns, tier, currency}); c.ok()) (*c)->Add(d.cost);
  }
  if (d.idle_cost > 0) {
    if (auto c = idle_cost_->WithLabels({ns, tier, currency}); c.ok()) (*c)->Add(d.idle_cost);
  }
}

void OperatorMetrics::SetIdleGpus(const std::string& key, const std::string& ns, const std::string& tier,
                                  double idle_gpus) {
  std::lock_guard lock(mu_);
  JobState& j = jobs_[key];
  if (j.ns == ns && j.tier == tier && j.idle_gpus == idle_gpus) return;
  j.ns = ns;
  j.tier = tier;
  j.idle_gpus = idle_gpus;
  RefreshLocked();
}

void OperatorMetrics::ForgetJob(const std::string& key) {
  std::lock_guard lock(mu_);
  jobs_.erase(key);
  RefreshLocked();
}

void OperatorMetrics::RefreshLocked() {
  std::map<Phase, int> counts;
  std::map<Phase, double> gpus;
  double oldest = 0;
  for (const auto& [_, v] : jobs_) {
    ++counts[v.phase];
    gpus[v.phase] += v.gpus;
    if (v.phase == Phase::kRunning) oldest = std::max(oldest, v.checkpoint_age_seconds);
  }
  for (Phase p : {Phase::kPending, Phase::kQueued, Phase::kStarting, Phase::kRunning, Phase::kRestarting,
                  Phase::kSuspended, Phase::kSucceeded, Phase::kFailed}) {
    auto g = phase_->WithLabels({std::string(PhaseName(p))});
    if (g.ok()) (*g)->Set(counts[p]);
    auto gg = gpus_->WithLabels({std::string(PhaseName(p))});
    if (gg.ok()) (*gg)->Set(gpus[p]);
  }
  checkpoint_age_->Set(oldest);
  std::map<std::pair<std::string, std::string>, double> idle;
  for (const auto& [_, v] : jobs_) {
    if (!v.ns.empty()) idle[{v.ns, v.tier}] += v.idle_gpus;
  }
  for (const auto& series : idle_series_) idle.try_emplace(series, 0.0);  // back to 0, not stale
  for (const auto& [series, gpus] : idle) {
    if (gpus == 0 && !idle_series_.count(series)) continue;
    if (auto g = idle_gpus_->WithLabels({series.first, series.second}); g.ok()) (*g)->Set(gpus);
    idle_series_.insert(series);
  }
}

}  // namespace phalanx::op
