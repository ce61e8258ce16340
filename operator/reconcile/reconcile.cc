#include "operator/reconcile/reconcile.h"

#include <algorithm>

#include <fmt/format.h>

#include "operator/api/keys.h"
#include "operator/api/time_format.h"
#include "operator/api/training_job_codec.h"
#include "operator/lifecycle/checkpoint.h"
#include "operator/lifecycle/pod_outcome.h"
#include "operator/lifecycle/preempt_request.h"
#include "operator/lifecycle/restart_policy.h"

namespace phalanx::op {

namespace {

void SetCondition(TrainingJobStatus& st, const std::string& type, const std::string& status,
                  const std::string& reason, const std::string& message, SystemTime now) {
  for (Condition& c : st.conditions) {
    if (c.type != type) continue;
    if (c.status != status) c.last_transition_time = TruncateToSeconds(now);
    c.status = status;
    c.reason = reason;
    c.message = message;
    return;
  }
  if (status == "False") return;  // no need to record a condition that never held
  st.conditions.push_back(Condition{type, status, reason, message, TruncateToSeconds(now)});
}

// Carries one reconcile: a copy of the status being evolved and the plan being built.
class Reconciliation {
 public:
  Reconciliation(const TrainingJob& job, const std::vector<ObservedPod>& pods, bool service_exists,
                 SystemTime now, const ReconcileOptions& options)
      : job_(job), spec_(job.spec), pods_(pods), service_exists_(service_exists), now_(now),
        options_(options), st_(job.status) {}

  ReconcilePlan Run();

 private:
  void Harvest();
  void ReleaseFinalizers(bool all);
  void DeleteStalePods();
  void Suspend();
  void Active();
  void StartAttempt(int32_t attempt, std::string restart_reason);
  void DecideRestart(RestartClass c, const std::string& reason, const std::string& message,
                     bool mark_disruption);
  void ContinueRestart(bool may_start);
  void AccountLostWork();
  void StopRunningClock();
  void HandlePreemptRequest();
  void Fail(const std::string& reason, const std::string& message);
  void Succeed();
  void Terminal();
  void Delete(const ObservedPod& pod, bool mark_disruption = false, const std::string& message = "");
  void SetPhase(Phase p, const std::string& reason, const std::string& message);
  void Event(bool warning, std::string reason, std::string message) {
    plan_.events.push_back(JobEvent{warning, std::move(reason), std::move(message)});
  }
  void RequeueAt(SystemTime t) {
    Duration d = std::max<Duration>(t - now_, std::chrono::seconds(1));
    if (!plan_.requeue_after || d < *plan_.requeue_after) plan_.requeue_after = d;
  }
  bool AccountUsage(bool status_changed);
  void Finish();

  const TrainingJob& job_;
  const TrainingJobSpec& spec_;
  const std::vector<ObservedPod>& pods_;
  bool service_exists_;
  SystemTime now_;
  const ReconcileOptions& options_;
  TrainingJobStatus st_;
  ReconcilePlan plan_;
  std::vector<std::string> deleted_;  // names already in plan_.delete_pods
  bool checkpoint_moved_ = false;
};

ReconcilePlan Reconciliation::Run() {
  Harvest();
  if (job_.meta.deletion_timestamp) {
    // The job is going away: nothing to restart; let garbage collection take the pods.
    ReleaseFinalizers(/*all=*/true);
    Finish();
    return std::move(plan_);
  }
  for (const ObservedPod& p : pods_) {
    if (p.attempt > st_.attempt) {
      // Our own status write has not reached this copy of the job yet: acting on it could
      // delete the newer gang. Wait for the cache to catch up.
      ReconcilePlan wait;
      wait.requeue_after = std::chrono::seconds(1);
      return wait;
    }
  }
  if (!job_.spec_error.ok()) {
    if (st_.phase != Phase::kFailed) {
      Fail("InvalidSpec", job_.spec_error.message());
    } else {
      Terminal();
    }
  } else {
    st_.observed_generation = job_.meta.generation;
    st_.selector = JobSelector(job_.meta.name);
    st_.gpus = spec_.TotalGpus();
    if (IsTerminal(st_.phase)) {
      Terminal();
    } else {
      DeleteStalePods();
      if (spec_.run_policy.suspend) {
        Suspend();
      } else {
        if (st_.phase == Phase::kSuspended) {
          SetCondition(st_, "Suspended", "False", "Resumed", "runPolicy.suspend cleared", now_);
        }
        if (st_.attempt == 0) {
          StartAttempt(1, "");
        } else if (st_.restart && st_.restart->attempt == st_.attempt) {
          ContinueRestart(/*may_start=*/true);
        } else {
          Active();
        }
      }
    }
  }
  ReleaseFinalizers(/*all=*/false);
  Finish();
  return std::move(plan_);
}

void Reconciliation::Harvest() {
  for (const ObservedPod& pod : pods_) {
    for (const ObservedContainer& c : pod.containers) {
      if (!c.terminated || c.message.empty()) continue;
      auto report = ParseCheckpointReport(c.message);
      if (!report.ok()) continue;  // ordinary log tail, not a checkpoint record
      if (ApplyCheckpointReport(st_, *report, pod.attempt, c.finished_at.value_or(now_))) {
        checkpoint_moved_ = true;
        Event(false, "CheckpointCommitted",
              fmt::format("step {} at {} (from pod {})", report->step, report->path, pod.name));
      }
    }
  }
}

void Reconciliation::ReleaseFinalizers(bool all) {
  for (const ObservedPod& pod : pods_) {
    if (!pod.HasFinalizer(kFinalizerCheckpoint)) continue;
    bool release = all || pod.terminal();
    if (!release && pod.deleting()) {
      bool any_running = false;
      for (const ObservedContainer& c : pod.containers) any_running = any_running || c.running;
      // Unscheduled: no container will ever run. Otherwise wait for the kubelet to
      // report the containers terminated (with their termination messages).
      release = pod.node_name.empty() || (!pod.containers.empty() && !any_running);
      if (!release) {
        const SystemTime stuck_at = *pod.deletion_timestamp +
                                    std::chrono::duration_cast<SystemTime::duration>(options_.stuck_terminating_timeout);
        if (now_ >= stuck_at) {
          release = true;
          plan_.delete_pods.push_back(PodDeletion{pod.name, pod.uid, false, "", "", /*force=*/true});
          Event(true, "ForcedDeletion",
                fmt::format("pod {} stuck Terminating on node {}; finalizer removed and deletion forced",
                            pod.name, pod.node_name));
        } else {
          RequeueAt(stuck_at);
        }
      }
    }
    if (release) plan_.remove_finalizers.push_back(FinalizerRemoval{pod.name, pod.uid});
  }
}

void Reconciliation::Delete(const ObservedPod& pod, bool mark_disruption, const std::string& message) {
  if (pod.deleting()) return;
  if (std::find(deleted_.begin(), deleted_.end(), pod.name) != deleted_.end()) return;
  deleted_.push_back(pod.name);
  PodDeletion d{pod.name, pod.uid, mark_disruption, "", "", false};
  if (mark_disruption) {
    d.disruption_reason = "PreemptionByScheduler";
    d.disruption_message = message;
  }
  plan_.delete_pods.push_back(std::move(d));
}

void Reconciliation::DeleteStalePods() {
  for (const ObservedPod& pod : pods_) {
    if (pod.attempt != st_.attempt || pod.index < 0 || pod.index >= spec_.replicas) Delete(pod);
  }
}

void Reconciliation::SetPhase(Phase p, const std::string& reason, const std::string& message) {
  if (st_.phase == p) return;
  for (Phase left : {Phase::kRunning, Phase::kRestarting, Phase::kSuspended}) {
    if (st_.phase == left) SetCondition(st_, std::string(PhaseName(left)), "False", std::string(PhaseName(p)), "", now_);
  }
  if (p == Phase::kRunning || p == Phase::kRestarting || p == Phase::kSuspended || IsTerminal(p)) {
    SetCondition(st_, std::string(PhaseName(p)), "True", reason, message, now_);
  }
  const bool warning = p == Phase::kFailed || p == Phase::kRestarting;
  Event(warning, std::string(PhaseName(p)),
        fmt::format("phase {} -> {}{}{}", st_.phase == Phase::kNone ? "New" : PhaseName(st_.phase), PhaseName(p),
                    message.empty() ? "" : ": ", message));
  st_.phase = p;
}

void Reconciliation::StopRunningClock() {
  if (!st_.running_since) return;
  st_.running_seconds += std::max(0.0, SecondsBetween(*st_.running_since, now_));
  st_.running_since.reset();
}

void Reconciliation::StartAttempt(int32_t attempt, std::string restart_reason) {
  st_.attempt = attempt;
  st_.attempt_start_time = TruncateToSeconds(now_);
  st_.running_since.reset();
  st_.resume_from = st_.last_committed ? st_.last_committed->path : "";
  AttemptContext ctx{attempt, st_.resume_from, std::move(restart_reason)};
  for (int32_t i = 0; i < spec_.replicas; ++i) {
    plan_.create_pods.push_back(BuildPod(job_, ctx, i, options_.pod));
  }
  SetPhase(Phase::kPending, "GangCreated", "");
  Event(false, "GangCreated",
        fmt::format("attempt {}: gang {} of {} pods{}", attempt, GangName(job_.meta.name, attempt),
                    spec_.replicas,
                    st_.resume_from.empty() ? "" : fmt::format(", resuming from {}", st_.resume_from)));
}

void Reconciliation::AccountLostWork() {
  if (!st_.restart || st_.restart->gang_gone_time) return;
  const double lost = LostGpuSeconds(spec_.TotalGpus(), st_.restart->running_since, st_.last_committed,
                                     st_.restart->decided_time);
  st_.lost_gpu_seconds += lost;
  plan_.lost_gpu_seconds_added += lost;
}

void Reconciliation::DecideRestart(RestartClass c, const std::string& reason, const std::string& message,
                                   bool mark_disruption) {
  PendingRestart r;
  r.attempt = st_.attempt;
  r.restart_class = c;
  r.reason = reason;
  r.message = message;
  r.decided_time = TruncateToSeconds(now_);
  r.running_since = st_.running_since;
  r.mark_disruption = mark_disruption;
  StopRunningClock();
  const std::string exhausted = CountRestart(st_, spec_.failure_policy, c, reason);
  if (c == RestartClass::kFailure) {
    r.not_before = TruncateToSeconds(now_) +
                   std::chrono::duration_cast<SystemTime::duration>(
                       FailureBackoff(spec_.failure_policy.backoff, st_.consecutive_failures));
  }
  st_.restart = r;
  plan_.restart_decided = ReconcilePlan::Restart{c, reason};
  if (!exhausted.empty()) {
    Fail(c == RestartClass::kFailure ? "MaxFailuresExceeded" : "MaxDisruptionsExceeded",
         fmt::format("{}; last: {}", exhausted, message));
    return;
  }
  SetPhase(Phase::kRestarting, reason, message);
  Event(c == RestartClass::kFailure, "RestartDecided",
        fmt::format("attempt {} restarts as a whole gang ({} {}): {}", st_.attempt, RestartClassName(c), reason,
                    message));
  ContinueRestart(/*may_start=*/true);
}

void Reconciliation::ContinueRestart(bool may_start) {
  PendingRestart& r = *st_.restart;
  const std::string drain_message =
      st_.preemption ? fmt::format("graceful preemption {} for {}", st_.preemption->request_id,
                                   st_.preemption->preemptor)
                     : r.message;
  for (const ObservedPod& pod : pods_) {
    if (pod.attempt == r.attempt) Delete(pod, r.mark_disruption, drain_message);
  }
  if (may_start) SetPhase(Phase::kRestarting, r.reason, r.message);
  if (!pods_.empty()) return;  // woken again as each pod goes away
  if (!r.gang_gone_time) {
    AccountLostWork();
    st_.restart->gang_gone_time = TruncateToSeconds(now_);
  }
  if (!may_start) return;
  if (r.not_before && now_ < *r.not_before) {
    RequeueAt(*r.not_before);
    return;
  }
  LastRestart last{r.restart_class, r.reason, r.message, TruncateToSeconds(now_),
                   std::max(0.0, SecondsBetween(*r.gang_gone_time, now_))};
  plan_.seconds_to_restart = last.seconds_to_restart;
  st_.last_restart = last;
  const std::string reason = r.reason;
  const int32_t next = r.attempt + 1;
  st_.restart.reset();
  StartAttempt(next, reason);
}

void Reconciliation::Suspend() {
  if (st_.attempt > 0 && !st_.restart) {
    bool has_pods = false;
    for (const ObservedPod& p : pods_) has_pods = has_pods || p.attempt == st_.attempt;
    if (has_pods) {
      PendingRestart r;
      r.attempt = st_.attempt;
      r.restart_class = RestartClass::kSuspend;
      r.reason = "Suspended";
      r.message = "runPolicy.suspend set";
      r.decided_time = TruncateToSeconds(now_);
      r.running_since = st_.running_since;
      StopRunningClock();
      st_.restart = r;
    }
  }
  if (st_.restart) ContinueRestart(/*may_start=*/false);
  // A suspended job whose gang is gone starts a fresh attempt on resume.
  if (st_.attempt > 0 && !st_.restart && pods_.empty() && st_.attempt_start_time) {
    PendingRestart r;
    r.attempt = st_.attempt;
    r.restart_class = RestartClass::kSuspend;
    r.reason = "Suspended";
    r.decided_time = TruncateToSeconds(now_);
    r.gang_gone_time = TruncateToSeconds(now_);
    st_.restart = r;
  }
  SetPhase(Phase::kSuspended, "Suspended", "runPolicy.suspend is true");
}

void Reconciliation::Active() {
  std::vector<const ObservedPod*> current(spec_.replicas, nullptr);
  for (const ObservedPod& p : pods_) {
    if (p.attempt == st_.attempt && p.index >= 0 && p.index < spec_.replicas) current[p.index] = &p;
  }
  const std::string hash = SpecHash(spec_);
  for (const ObservedPod* p : current) {
    if (p == nullptr || p->deleting()) continue;
    auto it = p->annotations.find(std::string(kAnnotationSpecHash));
    if (it != p->annotations.end() && it->second != hash) {
      DecideRestart(RestartClass::kUpdate, "SpecChanged",
                    fmt::format("spec changed (pod {} was built from {}, spec is now {})", p->name, it->second, hash),
                    false);
      return;
    }
  }
  // Disruptions win over failures: a rank killed by preemption makes its peers fail
  // too (NCCL timeouts), and those failures are not the job's fault.
  std::optional<PodOutcome> disruption, failure;
  int32_t succeeded = 0, missing = 0, gated = 0, bound = 0, running = 0;
  for (const ObservedPod* p : current) {
    if (p == nullptr) {
      ++missing;
      continue;
    }
    PodOutcome o = ClassifyPod(*p);
    if (o.kind == PodOutcomeKind::kDisruption && !disruption) disruption = o;
    if (o.kind == PodOutcomeKind::kFailure && !failure) failure = o;
    if (o.kind == PodOutcomeKind::kSucceeded) ++succeeded;
    if (p->gated) ++gated;
    if (!p->node_name.empty()) ++bound;
    if (p->phase == "Running" || p->phase == "Succeeded") ++running;
  }
  if (disruption) {
    DecideRestart(RestartClass::kDisruption, disruption->reason, disruption->message, false);
    return;
  }
  if (failure) {
    DecideRestart(RestartClass::kFailure, failure->reason, failure->message, false);
    return;
  }
  if (succeeded == spec_.replicas) {
    Succeed();
    return;
  }
  if (missing > 0) {
    // Deterministic names: a pod the cache has not shown yet just comes back AlreadyExists.
    std::string reason = st_.last_restart ? st_.last_restart->reason : "";
    AttemptContext ctx{st_.attempt, st_.resume_from, reason};
    for (int32_t i = 0; i < spec_.replicas; ++i) {
      if (current[i] == nullptr) plan_.create_pods.push_back(BuildPod(job_, ctx, i, options_.pod));
    }
    SetPhase(Phase::kPending, "CreatingPods", "");
  } else if (running == spec_.replicas) {
    if (!st_.running_since) st_.running_since = TruncateToSeconds(now_);
    if (!st_.start_time) st_.start_time = TruncateToSeconds(now_);
    SetPhase(Phase::kRunning, "GangRunning", fmt::format("all {} members running", spec_.replicas));
  } else if (bound == spec_.replicas && gated == 0) {
    SetPhase(Phase::kStarting, "GangBound", "");
  } else {
    SetPhase(Phase::kQueued, "AwaitingGangAdmission", "");
  }

  if (const auto& deadline = spec_.run_policy.active_deadline_seconds) {
    double used = st_.running_seconds + (st_.running_since ? SecondsBetween(*st_.running_since, now_) : 0);
    if (used >= static_cast<double>(*deadline)) {
      Fail("DeadlineExceeded", fmt::format("ran {:.0f}s, runPolicy.activeDeadlineSeconds is {}", used, *deadline));
      return;
    }
    if (st_.running_since) {
      RequeueAt(now_ + std::chrono::duration_cast<SystemTime::duration>(
                           std::chrono::duration<double>(static_cast<double>(*deadline) - used)));
    }
  }
  HandlePreemptRequest();
  if (st_.restart || IsTerminal(st_.phase)) return;

  // Cost is refreshed on a timer (and on every checkpoint), not on every reconcile:
  // a value that changes every second would make every reconcile a status write.
  if (st_.running_since) {
    const bool stale = !st_.preemption_cost.time || now_ - *st_.preemption_cost.time >= options_.cost_refresh;
    if (stale || checkpoint_moved_) st_.preemption_cost = ComputePreemptionCost(spec_, st_, now_);
    RequeueAt(*st_.preemption_cost.time + std::chrono::duration_cast<SystemTime::duration>(options_.cost_refresh));
  } else {
    st_.preemption_cost = PreemptionCost{};
  }
}

void Reconciliation::HandlePreemptRequest() {
  auto ann = job_.meta.annotations.find(std::string(kAnnotationPreemptRequest));
  auto req = ann == job_.meta.annotations.end() ? Result<PreemptRequest>(NotFoundError(""))
                                                : ParsePreemptRequest(ann->second);
  // A malformed request is not acted on (the extender owns the annotation and writes a new one),
  // but it is visible: condition PreemptRequestRefused, and a Warning event and a metric once per
  // new refusal (the condition remembers it, so a reconcile of the same annotation adds nothing).
  const bool refused = !req.ok() && ann != job_.meta.annotations.end();
  const Condition* was = nullptr;
  for (const Condition& c : st_.conditions) was = c.type == kConditionPreemptRequestRefused ? &c : was;
  const std::string why = refused ? req.status().message() : "";
  if (refused && (was == nullptr || was->status != "True" || was->message != why)) {
    Event(true, std::string(kConditionPreemptRequestRefused), why);
    plan_.preempt_request_refused = true;
  }
  SetCondition(st_, std::string(kConditionPreemptRequestRefused), refused ? "True" : "False",
               refused ? "InvalidAnnotation" : "Resolved", why, now_);
  if (!req.ok()) return;
  if (!st_.preemption || st_.preemption->request_id != req->request_id) {
    PreemptionState p;
    p.request_id = req->request_id;
    p.state = "Signalled";
    p.preemptor = req->preemptor;
    p.reason = req->reason;
    p.signalled_time = TruncateToSeconds(now_);
    p.deadline = req->deadline;
    p.baseline_step = st_.last_committed ? st_.last_committed->step : -1;
    st_.preemption = p;
    Event(false, "PreemptionRequested",
          fmt::format("request {} by {} ({}), deadline {}", p.request_id, p.preemptor, p.reason,
                      FormatRfc3339(p.deadline)));
    if (!st_.running_since) {
      st_.preemption->outcome = "NotRunning";
    } else if (spec_.checkpoint.dir.empty()) {
      st_.preemption->outcome = "NoCheckpointing";
    }
  }
  PreemptionState& p = *st_.preemption;
  if (p.state != "Signalled") return;
  if (p.outcome.empty()) {
    if (st_.last_committed && st_.last_committed->step > p.baseline_step) {
      p.outcome = "Checkpointed";
    } else if (now_ >= p.deadline) {
      p.outcome = "DeadlineExceeded";
    }
  }
  if (p.outcome.empty()) {
    const std::string notice = EncodePreemptNotice(p.request_id, p.deadline);
    for (const ObservedPod& pod : pods_) {
      if (pod.attempt != st_.attempt || pod.deleting()) continue;
      auto it = pod.annotations.find(std::string(kAnnotationPreemptNotice));
      if (it == pod.annotations.end() || it->second != notice) {
        plan_.annotate_pods.push_back(PodAnnotation{pod.name, std::string(kAnnotationPreemptNotice), notice});
      }
    }
    RequeueAt(p.deadline);
    return;
  }
  p.state = "Completed";
  Event(false, "PreemptionDraining", fmt::format("request {}: {}; draining the gang", p.request_id, p.outcome));
  DecideRestart(RestartClass::kDisruption, "GracefulPreemption",
                fmt::format("graceful preemption {} by {} ({})", p.request_id, p.preemptor, p.outcome),
                /*mark_disruption=*/true);
}

void Reconciliation::Fail(const std::string& reason, const std::string& message) {
  if (st_.restart) {
    AccountLostWork();
    st_.restart.reset();
  } else if (st_.running_since) {
    const double lost = LostGpuSeconds(spec_.TotalGpus(), st_.running_since, st_.last_committed, now_);
    st_.lost_gpu_seconds += lost;
    plan_.lost_gpu_seconds_added += lost;
  }
  StopRunningClock();
  st_.completion_time = TruncateToSeconds(now_);
  st_.preemption_cost = PreemptionCost{};
  SetPhase(Phase::kFailed, reason, message);
  Terminal();
}

void Reconciliation::Succeed() {
  StopRunningClock();
  st_.completion_time = TruncateToSeconds(now_);
  st_.preemption_cost = PreemptionCost{};
  SetPhase(Phase::kSucceeded, "AllMembersSucceeded", fmt::format("all {} members succeeded", spec_.replicas));
  Terminal();
}

void Reconciliation::Terminal() {
  const CleanPodPolicy policy =
      job_.spec_error.ok() ? spec_.run_policy.clean_pod_policy : CleanPodPolicy::kAll;
  for (const ObservedPod& pod : pods_) {
    if (policy == CleanPodPolicy::kAll || (policy == CleanPodPolicy::kRunning && !pod.terminal())) Delete(pod);
  }
  if (job_.spec_error.ok() && spec_.run_policy.ttl_seconds_after_finished && st_.completion_time) {
    const SystemTime expire = *st_.completion_time + std::chrono::seconds(*spec_.run_policy.ttl_seconds_after_finished);
    if (now_ >= expire) {
      plan_.delete_job = true;
    } else {
      RequeueAt(expire);
    }
  }
}

void Reconciliation::Finish() {
  int32_t live = 0;
  for (const ObservedPod& p : pods_) {
    if (p.attempt == st_.attempt && !p.deleting() &&
        std::find(deleted_.begin(), deleted_.end(), p.name) == deleted_.end()) {
      ++live;
    }
  }
  // Pods created by this plan count too: the scale subresource reports the gang's size.
  st_.replicas = live + static_cast<int32_t>(plan_.create_pods.size());
  if (!IsTerminal(st_.phase) && !service_exists_ && !job_.meta.deletion_timestamp && job_.spec_error.ok()) {
    plan_.create_service = BuildService(job_, options_.pod);
  }
  const bool changed = EncodeStatus(st_) != EncodeStatus(job_.status);
  const bool usage_changed = AccountUsage(changed);
  if (changed || usage_changed) plan_.status = st_;
}

// Usage rides on the status writes the reconcile makes anyway; it forces one only when an
// interval would otherwise be lost (a pod released or deleted, an idle period beginning or
// ending) and, while GPUs are held, once per options_.usage_update.
// Returns whether it changed status.usage. `natural`: the reconcile writes the status anyway.
bool Reconciliation::AccountUsage(bool natural) {
  UsageStep step = op::AccountUsage(st_.usage, pods_, spec_.scheduling.priority_class_name, options_.prices, now_);
  plan_.tier = step.tier;
  plan_.idle_gpus = step.idle_gpus;
  bool changed = false;
  const bool releasing = !plan_.remove_finalizers.empty() || !plan_.delete_pods.empty();
  const bool due = step.holding && (!st_.usage || now_ - st_.usage->accounted_until >= options_.usage_update);
  if (natural || releasing || due || step.idle_set_changed || step.currency_changed) {
    if (step.currency_changed) {
      Event(false, "CostCurrencyChanged",
            fmt::format("price table currency is now {}: status.usage.cost counts from {}", step.usage.currency,
                        FormatRfc3339(step.usage.accounted_until)));
    }
    const size_t idle_before = st_.usage ? st_.usage->idle_pods.size() : 0;
    if (step.usage.idle_pods.size() > idle_before) {
      Event(true, "GpusIdle",
            fmt::format("{} of the job's pods hold GPUs that have been idle ({} GPUs now): see status.usage.idlePods",
                        step.usage.idle_pods.size(), step.idle_gpus));
    }
    changed = !st_.usage || *st_.usage != step.usage;
    st_.usage = std::move(step.usage);
    plan_.usage_added = step.added;
  }
  if (step.holding) {
    RequeueAt(st_.usage->accounted_until + std::chrono::duration_cast<SystemTime::duration>(options_.usage_update));
  }
  return changed;
}

}  // namespace

ReconcilePlan Reconcile(const TrainingJob& job, const std::vector<ObservedPod>& pods, bool service_exists,
                        SystemTime now, const ReconcileOptions& options) {
  return Reconciliation(job, pods, service_exists, now, options).Run();
}

ReconcilePlan ReconcileOrphanPods(const std::vector<ObservedPod>& pods) {
  ReconcilePlan plan;
  for (const ObservedPod& p : pods) {
    if (p.HasFinalizer(kFinalizerCheckpoint)) plan.remove_finalizers.push_back(FinalizerRemoval{p.name, p.uid});
  }
  return plan;
}

}  // namespace phalanx::op
