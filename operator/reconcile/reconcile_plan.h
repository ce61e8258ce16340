// ReconcilePlan: everything one reconcile of a TrainingJob decided, as data. The daemon
// applies it in this order and stops at the first failure:
//   1. status (PUT .../status with the read resourceVersion: 409 -> re-read and retry);
//      a checkpoint read from a termination message is therefore recorded before the
//      finalizer that protected it is removed or anything is deleted;
//   2. service, pods to create (AlreadyExists = already done);
//   3. pod annotations, DisruptionTarget marks, deletions, finalizer removals;
//   4. job deletion (TTL), events.
// Applying a plan twice is harmless: creates hit AlreadyExists, deletes NotFound.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/base/clock.h"
#include "core/json/json.h"
#include "operator/api/training_job.h"
#include "operator/cost/usage.h"

namespace phalanx::op {

struct PodDeletion {
  std::string name;
  std::string uid;  // delete precondition: never delete a newer pod of the same name
  // Graceful-preemption drain: add condition DisruptionTarget=True (reason, message)
  // through pods/status before deleting.
  bool mark_disruption = false;
  std::string disruption_reason;
  std::string disruption_message;
  bool force = false;  // gracePeriodSeconds=0 (stuck Terminating on a lost node)
};

struct FinalizerRemoval {
  std::string name;
  std::string uid;
};

struct PodAnnotation {
  std::string name;
  std::string key;
  std::string value;
};

struct JobEvent {
  bool warning = false;
  std::string reason;
  std::string message;
};

struct ReconcilePlan {
  std::optional<TrainingJobStatus> status;  // set only when it changed
  std::optional<json::Json> create_service;
  std::vector<json::Json> create_pods;
  std::vector<PodAnnotation> annotate_pods;
  std::vector<PodDeletion> delete_pods;
  std::vector<FinalizerRemoval> remove_finalizers;
  bool delete_job = false;  // ttlSecondsAfterFinished expired
  std::vector<JobEvent> events;
  std::optional<Duration> requeue_after;

  // For metrics (applied only once the status write succeeded).
  struct Restart {
    RestartClass restart_class;
    std::string reason;
  };
  std::optional<Restart> restart_decided;
  std::optional<double> seconds_to_restart;  // a new attempt's gang was created
  double lost_gpu_seconds_added = 0;
  bool preempt_request_refused = false;  // a new malformed phalanx.io/preempt-request
  // Usage this plan's status adds (counters) and the job's tier; idle GPUs now (gauge).
  UsageDelta usage_added;
  std::string tier;
  double idle_gpus = 0;

  bool empty() const {
    return !status && !create_service && create_pods.empty() && annotate_pods.empty() &&
           delete_pods.empty() && remove_finalizers.empty() && !delete_job;
  }
};

}  // namespace phalanx::op
