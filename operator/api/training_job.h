// TrainingJob (phalanx.io/v1alpha1) as typed values: spec, status and the metadata the
// operator needs. The contract is docs/architecture.md §2.4; the user-facing reference is
// docs/trainingjob.md. Decoding lives in training_job_codec.h, rules in validation.h.
// Value types; thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/base/clock.h"
#include "core/base/status.h"
#include "core/json/json.h"
#include "operator/lifecycle/phase.h"

namespace phalanx::op {

struct ObjectMeta {
  std::string name;
  std::string namespace_;
  std::string uid;
  std::string resource_version;
  int64_t generation = 0;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::optional<SystemTime> creation_timestamp;
  std::optional<SystemTime> deletion_timestamp;
};

struct GangSpec {
  std::optional<int32_t> min_members;      // default: replicas
  std::optional<int32_t> timeout_seconds;  // default: the extender's (120 s)
};

struct TopologySpec {
  std::string level;  // e.g. "kubernetes.io/hostname"; empty = no constraint
  std::string mode;   // "required" | "preferred"; empty = extender default
};

struct SchedulingSpec {
  std::string priority_class_name;
  std::string queue;  // team queue (GpuQueue); copied to the pods' phalanx.io/queue label, "" = none
  GangSpec gang;
  TopologySpec topology;
};

struct CheckpointSpec {
  std::string dir;                        // empty = the job does not checkpoint
  int32_t flush_seconds = 0;              // time a save needs once notified
  int32_t expected_interval_seconds = 0;  // 0 = unknown
};

struct BackoffSpec {
  int32_t initial_seconds = 10;
  int32_t max_seconds = 600;
};

struct FailurePolicy {
  int32_t max_failures = 3;                // failures tolerated; one more fails the job
  std::optional<int32_t> max_disruptions;  // absent = unlimited
  BackoffSpec backoff;
};

enum class CleanPodPolicy { kRunning, kAll, kNone };

struct RunPolicy {
  bool suspend = false;
  std::optional<int64_t> active_deadline_seconds;  // counts running time only
  std::optional<int64_t> ttl_seconds_after_finished;
  CleanPodPolicy clean_pod_policy = CleanPodPolicy::kRunning;
};

struct TrainingJobSpec {
  int32_t replicas = 0;
  int32_t gpus_per_replica = 0;
  json::Json pod_template;  // PodTemplateSpec, copied into every pod
  SchedulingSpec scheduling;
  CheckpointSpec checkpoint;
  FailurePolicy failure_policy;
  RunPolicy run_policy;

  int32_t TotalGpus() const { return replicas * gpus_per_replica; }
  int32_t MinMembers() const { return scheduling.gang.min_members.value_or(replicas); }
};

struct Condition {
  std::string type;
  std::string status;  // "True" | "False" | "Unknown"
  std::string reason;
  std::string message;
  SystemTime last_transition_time{};
};

struct CheckpointRecord {
  int64_t step = 0;
  std::string path;
  SystemTime time{};
  int32_t attempt = 0;
};

struct PreemptionCost {
  double gpu_seconds_at_risk = 0;
  double checkpoint_age_seconds = 0;
  double notice_seconds_needed = 0;
  std::optional<SystemTime> time;  // when it was computed
};

enum class RestartClass { kFailure, kDisruption, kUpdate, kSuspend };

// A whole-gang restart decided for `attempt` and not yet carried out. Persisted so an
// operator restart neither counts it twice nor forgets the backoff.
struct PendingRestart {
  int32_t attempt = 0;
  RestartClass restart_class = RestartClass::kFailure;
  std::string reason;
  std::string message;
  SystemTime decided_time{};
  std::optional<SystemTime> not_before;       // backoff: earliest start of the next attempt
  std::optional<SystemTime> running_since;    // the attempt's running start (lost-work accounting)
  std::optional<SystemTime> gang_gone_time;   // when the last pod of the attempt was seen gone
  bool mark_disruption = false;               // graceful preemption drain: DisruptionTarget on pods
};

struct LastRestart {
  RestartClass restart_class = RestartClass::kFailure;
  std::string reason;
  std::string message;
  SystemTime time{};
  double seconds_to_restart = 0;  // last victim pod gone -> new gang created
};

// Graceful preemption bookkeeping (docs/architecture.md §2.2 phalanx.io/preempt-request).
struct PreemptionState {
  std::string request_id;
  std::string state;  // "Signalled" | "Completed"
  std::string preemptor;
  std::string reason;
  SystemTime signalled_time{};
  SystemTime deadline{};
  int64_t baseline_step = -1;
  std::string outcome;  // "Checkpointed" | "DeadlineExceeded" | "NotRunning" | ...
};

// GPU usage and its cost accumulated over every attempt (docs/operator.md "Utilisation and
// cost"). Counted from the pods' GPU-holding intervals up to `accounted_until` only, so an
// accounting step always adds (accounted_until, now] and is persisted in the same status write
// that moves accounted_until: a conflict, a re-list or an operator restart never counts twice.
// status.usage.pods values.
inline constexpr std::string_view kUsagePodHolding = "holding";
inline constexpr std::string_view kUsagePodReleased = "released";

struct UsageStatus {
  double gpu_seconds = 0;       // GPU-equivalents x seconds held (pod start -> containers ended)
  double idle_gpu_seconds = 0;  // the part of gpu_seconds while phalanx.io/idle-since was set
  double cost = 0;              // in `currency`; 0 and currency "" without a price table
  double idle_cost = 0;
  std::string currency;
  SystemTime since{};           // when accounting of this job began
  SystemTime accounted_until{}; // usage is counted up to here
  // Pods whose idle period is already being counted: pod name -> its phalanx.io/idle-since.
  // A pod that appears here for the first time has its idle period back-filled from
  // idle-since; later steps count from accounted_until only.
  std::map<std::string, std::string> idle_pods;
  // What each visible GPU pod has been counted for: pod name -> "holding" (counted up to
  // accounted_until, still running) or "released" (counted to its end, never again). Lets a
  // lagging view be corrected: a pod counted as holding and later seen ended before
  // accounted_until gives back what was counted past its end; a pod seen for the first time
  // already ended is counted from its start. Absent in statuses written before it existed: then
  // every pod counts from accounted_until, as those operators did.
  std::optional<std::map<std::string, std::string>> pods;

  bool operator==(const UsageStatus&) const = default;
};

struct TrainingJobStatus {
  Phase phase = Phase::kNone;
  std::vector<Condition> conditions;
  int32_t attempt = 0;  // monotonic; 0 = no gang created yet
  int32_t failures = 0;
  int32_t consecutive_failures = 0;  // drives backoff; reset by a newer checkpoint
  std::map<std::string, int32_t> failures_by_reason;
  int32_t disruptions = 0;
  std::map<std::string, int32_t> disruptions_by_reason;
  std::optional<CheckpointRecord> last_committed;
  PreemptionCost preemption_cost;
  double lost_gpu_seconds = 0;
  std::optional<SystemTime> start_time;       // first time a gang was running
  std::optional<SystemTime> completion_time;
  int64_t observed_generation = 0;
  int32_t replicas = 0;   // live pods of the current attempt (scale subresource)
  int32_t gpus = 0;       // replicas * gpusPerReplica (printer column)
  std::string selector;   // label selector of the job's pods (scale subresource)
  std::optional<SystemTime> attempt_start_time;  // current attempt's pods created
  std::string resume_from;  // PHALANX_RESUME_FROM of the current attempt (same for every rank)
  std::optional<SystemTime> running_since;       // current attempt fully running
  double running_seconds = 0;                    // finished running periods (activeDeadline)
  std::optional<PendingRestart> restart;
  std::optional<LastRestart> last_restart;
  std::optional<PreemptionState> preemption;
  std::optional<UsageStatus> usage;
};

struct TrainingJob {
  ObjectMeta meta;
  // OK when the spec decoded and validated; otherwise what is wrong (phase Failed).
  Status spec_error;
  TrainingJobSpec spec;
  TrainingJobStatus status;
};

std::string_view RestartClassName(RestartClass c);
bool ParseRestartClass(std::string_view name, RestartClass& out);
std::string_view CleanPodPolicyName(CleanPodPolicy p);

}  // namespace phalanx::op
