#include "operator/api/training_job_codec.h"

#include <fmt/format.h>

#include "operator/api/field_reader.h"
#include "operator/api/time_format.h"
#include "operator/api/validation.h"

namespace phalanx::op {

namespace {

using json::Json;

std::map<std::string, std::string> StringMap(FieldReader& r, std::string_view key) {
  std::map<std::string, std::string> out;
  const Json* m = r.Object(key);
  if (m == nullptr) return out;
  for (auto it = m->begin(); it != m->end(); ++it) {
    if (!it->is_string()) {
      r.Fail(fmt::format("{}.{}: expected string, got {}", r.Path(key), it.key(), json::TypeName(*it)));
      continue;
    }
    out[it.key()] = it->get<std::string>();
  }
  return out;
}

std::optional<SystemTime> Time(FieldReader& r, std::string_view key) {
  auto text = r.String(key);
  if (!text) return std::nullopt;
  auto t = ParseRfc3339(*text);
  if (!t.ok()) {
    r.Fail(fmt::format("{}: {}", r.Path(key), t.status().message()));
    return std::nullopt;
  }
  return *t;
}

std::optional<int32_t> Int32(FieldReader& r, std::string_view key) {
  auto v = r.Int(key);
  if (!v) return std::nullopt;
  if (*v < INT32_MIN || *v > INT32_MAX) {
    r.Fail(fmt::format("{}: {} is out of range", r.Path(key), *v));
    return std::nullopt;
  }
  return static_cast<int32_t>(*v);
}

Status DecodeScheduling(const Json* obj, SchedulingSpec& out) {
  FieldReader r(obj, "spec.scheduling");
  r.RejectUnknown({"priorityClassName", "queue", "gang", "topology"});
  out.priority_class_name = r.String("priorityClassName").value_or("");
  out.queue = r.String("queue").value_or("");
  FieldReader gang(r.Object("gang"), "spec.scheduling.gang");
  gang.RejectUnknown({"minMembers", "timeoutSeconds"});
  out.gang.min_members = Int32(gang, "minMembers");
  out.gang.timeout_seconds = Int32(gang, "timeoutSeconds");
  FieldReader topo(r.Object("topology"), "spec.scheduling.topology");
  topo.RejectUnknown({"level", "mode"});
  out.topology.level = topo.String("level").value_or("");
  out.topology.mode = topo.String("mode").value_or("");
  PHX_RETURN_IF_ERROR(r.status());
  PHX_RETURN_IF_ERROR(gang.status());
  return topo.status();
}

Status DecodeFailurePolicy(const Json* obj, FailurePolicy& out) {
  FieldReader r(obj, "spec.failurePolicy");
  r.RejectUnknown({"maxFailures", "maxDisruptions", "backoff"});
  if (auto v = Int32(r, "maxFailures")) out.max_failures = *v;
  out.max_disruptions = Int32(r, "maxDisruptions");
  FieldReader b(r.Object("backoff"), "spec.failurePolicy.backoff");
  b.RejectUnknown({"initialSeconds", "maxSeconds"});
  if (auto v = Int32(b, "initialSeconds")) out.backoff.initial_seconds = *v;
  if (auto v = Int32(b, "maxSeconds")) out.backoff.max_seconds = *v;
  PHX_RETURN_IF_ERROR(r.status());
  return b.status();
}

Status DecodeRunPolicy(const Json* obj, RunPolicy& out) {
  FieldReader r(obj, "spec.runPolicy");
  r.RejectUnknown({"suspend", "activeDeadlineSeconds", "ttlSecondsAfterFinished", "cleanPodPolicy"});
  out.suspend = r.Bool("suspend").value_or(false);
  out.active_deadline_seconds = r.Int("activeDeadlineSeconds");
  out.ttl_seconds_after_finished = r.Int("ttlSecondsAfterFinished");
  if (auto p = r.String("cleanPodPolicy")) {
    if (*p == "Running") {
      out.clean_pod_policy = CleanPodPolicy::kRunning;
    } else if (*p == "All") {
      out.clean_pod_policy = CleanPodPolicy::kAll;
    } else if (*p == "None") {
      out.clean_pod_policy = CleanPodPolicy::kNone;
    } else {
      r.Fail(fmt::format("spec.runPolicy.cleanPodPolicy: \"{}\" is not one of Running, All, None", *p));
    }
  }
  return r.status();
}

}  // namespace

std::string_view RestartClassName(RestartClass c) {
  switch (c) {
    case RestartClass::kFailure: return "Failure";
    case RestartClass::kDisruption: return "Disruption";
    case RestartClass::kUpdate: return "Update";
    case RestartClass::kSuspend: return "Suspend";
  }
  return "Failure";
}

bool ParseRestartClass(std::string_view name, RestartClass& out) {
  for (RestartClass c : {RestartClass::kFailure, RestartClass::kDisruption, RestartClass::kUpdate,
                         RestartClass::kSuspend}) {
    if (RestartClassName(c) == name) {
      out = c;
      return true;
    }
  }
  return false;
}

std::string_view CleanPodPolicyName(CleanPodPolicy p) {
  switch (p) {
    case CleanPodPolicy::kRunning: return "Running";
    case CleanPodPolicy::kAll: return "All";
    case CleanPodPolicy::kNone: return "None";
  }
  return "Running";
}

Result<ObjectMeta> DecodeObjectMeta(const Json& metadata) {
  FieldReader r(&metadata, "metadata");
  ObjectMeta m;
  m.name = r.String("name").value_or("");
  m.namespace_ = r.String("namespace").value_or("");
  m.uid = r.String("uid").value_or("");
  m.resource_version = r.String("resourceVersion").value_or("");
  m.generation = r.Int("generation").value_or(0);
  m.labels = StringMap(r, "labels");
  m.annotations = StringMap(r, "annotations");
  m.creation_timestamp = Time(r, "creationTimestamp");
  m.deletion_timestamp = Time(r, "deletionTimestamp");
  PHX_RETURN_IF_ERROR(r.status());
  if (m.name.empty()) return InvalidArgumentError("metadata.name: required field missing");
  return m;
}

Result<TrainingJobSpec> DecodeSpec(const Json& spec_json, const ObjectMeta& meta) {
  PHX_RETURN_IF_ERROR(ValidateName(meta.name));
  if (!spec_json.is_object()) {
    return InvalidArgumentError(fmt::format("spec: expected object, got {}", json::TypeName(spec_json)));
  }
  FieldReader r(&spec_json, "spec");
  r.RejectUnknown({"replicas", "gpusPerReplica", "template", "scheduling", "checkpoint",
                   "failurePolicy", "runPolicy"});
  TrainingJobSpec spec;
  auto replicas = Int32(r, "replicas");
  auto gpus = Int32(r, "gpusPerReplica");
  PHX_RETURN_IF_ERROR(r.status());
  if (!replicas) return InvalidArgumentError("spec.replicas: required field missing");
  if (!gpus) return InvalidArgumentError("spec.gpusPerReplica: required field missing");
  spec.replicas = *replicas;
  spec.gpus_per_replica = *gpus;
  const Json* tmpl = r.Object("template");
  PHX_RETURN_IF_ERROR(r.status());
  if (tmpl == nullptr) return InvalidArgumentError("spec.template: required field missing");
  spec.pod_template = *tmpl;
  PHX_RETURN_IF_ERROR(DecodeScheduling(r.Object("scheduling"), spec.scheduling));
  FieldReader ck(r.Object("checkpoint"), "spec.checkpoint");
  ck.RejectUnknown({"dir", "flushSeconds", "expectedIntervalSeconds"});
  spec.checkpoint.dir = ck.String("dir").value_or("");
  spec.checkpoint.flush_seconds = Int32(ck, "flushSeconds").value_or(0);
  spec.checkpoint.expected_interval_seconds = Int32(ck, "expectedIntervalSeconds").value_or(0);
  PHX_RETURN_IF_ERROR(ck.status());
  PHX_RETURN_IF_ERROR(DecodeFailurePolicy(r.Object("failurePolicy"), spec.failure_policy));
  PHX_RETURN_IF_ERROR(DecodeRunPolicy(r.Object("runPolicy"), spec.run_policy));
  PHX_RETURN_IF_ERROR(r.status());
  PHX_RETURN_IF_ERROR(ValidateSpec(spec));
  return spec;
}

Result<TrainingJob> DecodeTrainingJob(const Json& object) {
  if (!object.is_object()) {
    return InvalidArgumentError(fmt::format("TrainingJob: expected object, got {}", json::TypeName(object)));
  }
  auto meta_it = object.find("metadata");
  if (meta_it == object.end()) return InvalidArgumentError("metadata: required field missing");
  TrainingJob job;
  PHX_ASSIGN_OR_RETURN(job.meta, DecodeObjectMeta(*meta_it));
  auto status_it = object.find("status");
  if (status_it != object.end() && !status_it->is_null()) {
    PHX_ASSIGN_OR_RETURN(job.status, DecodeStatus(*status_it));
  }
  static const Json kNull;
  auto spec_it = object.find("spec");
  auto spec = DecodeSpec(spec_it == object.end() ? kNull : *spec_it, job.meta);
  if (spec.ok()) {
    job.spec = std::move(spec).value();
  } else {
    job.spec_error = spec.status();
  }
  return job;
}

// ---- status ----

namespace {

std::map<std::string, int32_t> CountMap(FieldReader& r, std::string_view key) {
  std::map<std::string, int32_t> out;
  const Json* m = r.Object(key);
  if (m == nullptr) return out;
  FieldReader inner(m, r.Path(key));
  for (auto it = m->begin(); it != m->end(); ++it) {
    if (auto v = Int32(inner, it.key())) out[it.key()] = *v;
  }
  if (!inner.status().ok()) r.Fail(inner.status().message());
  return out;
}

RestartClass ReadClass(FieldReader& r, std::string_view key) {
  RestartClass c = RestartClass::kFailure;
  if (auto name = r.String(key); name && !ParseRestartClass(*name, c)) {
    r.Fail(fmt::format("{}: unknown restart class \"{}\"", r.Path(key), *name));
  }
  return c;
}

void PutTime(Json& obj, std::string_view key, const std::optional<SystemTime>& t) {
  if (t) obj[std::string(key)] = FormatRfc3339(*t);
}

}  // namespace

Result<TrainingJobStatus> DecodeStatus(const Json& status_json) {
  FieldReader r(&status_json, "status");
  TrainingJobStatus s;
  s.phase = ParsePhase(r.String("phase").value_or(""));
  if (const Json* conds = r.Raw("conditions"); conds != nullptr && conds->is_array()) {
    for (size_t i = 0; i < conds->size(); ++i) {
      FieldReader c(&(*conds)[i], fmt::format("status.conditions[{}]", i));
      Condition cond;
      cond.type = c.String("type").value_or("");
      cond.status = c.String("status").value_or("");
      cond.reason = c.String("reason").value_or("");
      cond.message = c.String("message").value_or("");
      cond.last_transition_time = Time(c, "lastTransitionTime").value_or(SystemTime{});
      PHX_RETURN_IF_ERROR(c.status());
      s.conditions.push_back(std::move(cond));
    }
  }
  s.attempt = Int32(r, "attempt").value_or(0);
  s.failures = Int32(r, "failures").value_or(0);
  s.consecutive_failures = Int32(r, "consecutiveFailures").value_or(0);
  s.failures_by_reason = CountMap(r, "failuresByReason");
  s.disruptions = Int32(r, "disruptions").value_or(0);
  s.disruptions_by_reason = CountMap(r, "disruptionsByReason");
  if (const Json* ck = r.Object("checkpoint")) {
    FieldReader c(ck, "status.checkpoint");
    if (const Json* last = c.Object("lastCommitted")) {
      FieldReader l(last, "status.checkpoint.lastCommitted");
      CheckpointRecord rec;
      rec.step = l.Int("step").value_or(0);
      rec.path = l.String("path").value_or("");
      rec.time = Time(l, "time").value_or(SystemTime{});
      rec.attempt = Int32(l, "attempt").value_or(0);
      PHX_RETURN_IF_ERROR(l.status());
      s.last_committed = rec;
    }
    PHX_RETURN_IF_ERROR(c.status());
  }
  if (const Json* pc = r.Object("preemptionCost")) {
    FieldReader c(pc, "status.preemptionCost");
    s.preemption_cost.gpu_seconds_at_risk = c.Number("gpuSecondsAtRisk").value_or(0);
    s.preemption_cost.checkpoint_age_seconds = c.Number("checkpointAgeSeconds").value_or(0);
    s.preemption_cost.notice_seconds_needed = c.Number("noticeSecondsNeeded").value_or(0);
    s.preemption_cost.time = Time(c, "time");
    PHX_RETURN_IF_ERROR(c.status());
  }
  s.lost_gpu_seconds = r.Number("lostGpuSeconds").value_or(0);
  s.start_time = Time(r, "startTime");
  s.completion_time = Time(r, "completionTime");
  s.observed_generation = r.Int("observedGeneration").value_or(0);
  s.replicas = Int32(r, "replicas").value_or(0);
  s.gpus = Int32(r, "gpus").value_or(0);
  s.selector = r.String("selector").value_or("");
  s.attempt_start_time = Time(r, "attemptStartTime");
  s.running_since = Time(r, "runningSince");
  s.resume_from = r.String("resumeFrom").value_or("");
  s.running_seconds = r.Number("runningSeconds").value_or(0);
  if (const Json* rs = r.Object("restart")) {
    FieldReader c(rs, "status.restart");
    PendingRestart p;
    p.attempt = Int32(c, "attempt").value_or(0);
    p.restart_class = ReadClass(c, "class");
    p.reason = c.String("reason").value_or("");
    p.message = c.String("message").value_or("");
    p.decided_time = Time(c, "decidedTime").value_or(SystemTime{});
    p.not_before = Time(c, "notBefore");
    p.running_since = Time(c, "runningSince");
    p.gang_gone_time = Time(c, "gangGoneTime");
    p.mark_disruption = c.Bool("markDisruption").value_or(false);
    PHX_RETURN_IF_ERROR(c.status());
    s.restart = p;
  }
  if (const Json* lr = r.Object("lastRestart")) {
    FieldReader c(lr, "status.lastRestart");
    LastRestart l;
    l.restart_class = ReadClass(c, "class");
    l.reason = c.String("reason").value_or("");
    l.message = c.String("message").value_or("");
    l.time = Time(c, "time").value_or(SystemTime{});
    l.seconds_to_restart = c.Number("secondsToRestart").value_or(0);
    PHX_RETURN_IF_ERROR(c.status());
    s.last_restart = l;
  }
  if (const Json* pr = r.Object("preemption")) {
    FieldReader c(pr, "status.preemption");
    PreemptionState p;
    p.request_id = c.String("requestId").value_or("");
    p.state = c.String("state").value_or("");
    p.preemptor = c.String("preemptor").value_or("");
    p.reason = c.String("reason").value_or("");
    p.signalled_time = Time(c, "signalledTime").value_or(SystemTime{});
    p.deadline = Time(c, "deadline").value_or(SystemTime{});
    p.baseline_step = c.Int("baselineStep").value_or(-1);
    p.outcome = c.String("outcome").value_or("");
    PHX_RETURN_IF_ERROR(c.status());
    s.preemption = p;
  }
  if (const Json* u = r.Object("usage")) {
    FieldReader c(u, "status.usage");
    UsageStatus us;
    us.gpu_seconds = c.Number("gpuSeconds").value_or(0);
    us.idle_gpu_seconds = c.Number("idleGpuSeconds").value_or(0);
    us.cost = c.Number("cost").value_or(0);
    us.idle_cost = c.Number("idleCost").value_or(0);
    us.currency = c.String("currency").value_or("");
    us.since = Time(c, "since").value_or(SystemTime{});
    us.accounted_until = Time(c, "accountedUntil").value_or(us.since);
    us.idle_pods = StringMap(c, "idlePods");
    if (c.Object("pods") != nullptr) {
      us.pods = StringMap(c, "pods");
      for (const auto& [pod, state] : *us.pods) {
        if (state != kUsagePodHolding && state != kUsagePodReleased) {
          c.Fail(fmt::format("status.usage.pods.{}: must be \"{}\" or \"{}\", got \"{}\"", pod, kUsagePodHolding,
                             kUsagePodReleased, state));
        }
      }
    }
    PHX_RETURN_IF_ERROR(c.status());
    s.usage = std::move(us);
  }
  PHX_RETURN_IF_ERROR(r.status());
  return s;
}

Json EncodeStatus(const TrainingJobStatus& s) {
  Json out = Json::object();
  if (s.phase != Phase::kNone) out["phase"] = std::string(PhaseName(s.phase));
  Json conds = Json::array();
  for (const Condition& c : s.conditions) {
    Json j = {{"type", c.type}, {"status", c.status}, {"lastTransitionTime", FormatRfc3339(c.last_transition_time)}};
    if (!c.reason.empty()) j["reason"] = c.reason;
    if (!c.message.empty()) j["message"] = c.message;
    conds.push_back(std::move(j));
  }
  if (!conds.empty()) out["conditions"] = std::move(conds);
  out["attempt"] = s.attempt;
  out["failures"] = s.failures;
  out["consecutiveFailures"] = s.consecutive_failures;
  if (!s.failures_by_reason.empty()) out["failuresByReason"] = s.failures_by_reason;
  out["disruptions"] = s.disruptions;
  if (!s.disruptions_by_reason.empty()) out["disruptionsByReason"] = s.disruptions_by_reason;
  if (s.last_committed) {
    const CheckpointRecord& c = *s.last_committed;
    out["checkpoint"]["lastCommitted"] = {
        {"step", c.step}, {"path", c.path}, {"time", FormatRfc3339(c.time)}, {"attempt", c.attempt}};
  }
  {
    Json pc = {{"gpuSecondsAtRisk", s.preemption_cost.gpu_seconds_at_risk},
               {"checkpointAgeSeconds", s.preemption_cost.checkpoint_age_seconds},
               {"noticeSecondsNeeded", s.preemption_cost.notice_seconds_needed}};
    PutTime(pc, "time", s.preemption_cost.time);
    out["preemptionCost"] = std::move(pc);
  }
  out["lostGpuSeconds"] = s.lost_gpu_seconds;
  PutTime(out, "startTime", s.start_time);
  PutTime(out, "completionTime", s.completion_time);
  out["observedGeneration"] = s.observed_generation;
  out["replicas"] = s.replicas;
  out["gpus"] = s.gpus;
  if (!s.selector.empty()) out["selector"] = s.selector;
  PutTime(out, "attemptStartTime", s.attempt_start_time);
  PutTime(out, "runningSince", s.running_since);
  if (!s.resume_from.empty()) out["resumeFrom"] = s.resume_from;
  out["runningSeconds"] = s.running_seconds;
  if (s.restart) {
    const PendingRestart& p = *s.restart;
    Json j = {{"attempt", p.attempt},
              {"class", std::string(RestartClassName(p.restart_class))},
              {"reason", p.reason},
              {"decidedTime", FormatRfc3339(p.decided_time)}};
    if (!p.message.empty()) j["message"] = p.message;
    PutTime(j, "notBefore", p.not_before);
    PutTime(j, "runningSince", p.running_since);
    PutTime(j, "gangGoneTime", p.gang_gone_time);
    if (p.mark_disruption) j["markDisruption"] = true;
    out["restart"] = std::move(j);
  }
  if (s.last_restart) {
    const LastRestart& l = *s.last_restart;
    Json j = {{"class", std::string(RestartClassName(l.restart_class))},
              {"reason", l.reason},
              {"time", FormatRfc3339(l.time)},
              {"secondsToRestart", l.seconds_to_restart}};
    if (!l.message.empty()) j["message"] = l.message;
    out["lastRestart"] = std::move(j);
  }
  if (s.preemption) {
    const PreemptionState& p = *s.preemption;
    Json j = {{"requestId", p.request_id},
              {"state", p.state},
              {"signalledTime", FormatRfc3339(p.signalled_time)},
              {"deadline", FormatRfc3339(p.deadline)},
              {"baselineStep", p.baseline_step}};
    if (!p.preemptor.empty()) j["preemptor"] = p.preemptor;
    if (!p.reason.empty()) j["reason"] = p.reason;
    if (!p.outcome.empty()) j["outcome"] = p.outcome;
    out["preemption"] = std::move(j);
  }
  if (s.usage) {
    const UsageStatus& u = *s.usage;
    Json j = {{"gpuSeconds", u.gpu_seconds},
              {"idleGpuSeconds", u.idle_gpu_seconds},
              {"since", FormatRfc3339(u.since)},
              {"accountedUntil", FormatRfc3339(u.accounted_until)}};
    if (!u.currency.empty()) {
      j["cost"] = u.cost;
      j["idleCost"] = u.idle_cost;
      j["currency"] = u.currency;
    }
    if (!u.idle_pods.empty()) j["idlePods"] = u.idle_pods;
    if (u.pods) j["pods"] = *u.pods;  // written even when empty: marks the status as tracking pods
    out["usage"] = std::move(j);
  }
  return out;
}

}  // namespace phalanx::op
