#include "operator/api/validation.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "operator/api/keys.h"

namespace phalanx::op {

namespace {

// Quantities in resources are strings ("2") or integers; GPUs are whole numbers.
std::optional<int64_t> WholeQuantity(const json::Json& q) {
  if (q.is_number_integer()) return q.get<int64_t>();
  if (q.is_number_unsigned()) return static_cast<int64_t>(q.get<uint64_t>());
  if (q.is_string()) {
    const std::string s = q.get<std::string>();
    if (s.empty() || s.size() > 9) return std::nullopt;
    int64_t v = 0;
    for (char c : s) {
      if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
      v = v * 10 + (c - '0');
    }
    return v;
  }
  return std::nullopt;
}

Status ValidateTemplate(const TrainingJobSpec& spec) {
  const json::Json& t = spec.pod_template;
  if (!t.is_object()) return InvalidArgumentError("spec.template: expected object");
  auto spec_it = t.find("spec");
  if (spec_it == t.end() || !spec_it->is_object()) {
    return InvalidArgumentError("spec.template.spec: required field missing");
  }
  const json::Json& ps = *spec_it;
  if (auto m = t.find("metadata"); m != t.end() && !m->is_null() && !m->is_object()) {
    return InvalidArgumentError("spec.template.metadata: expected object");
  }
  auto containers = ps.find("containers");
  if (containers == ps.end() || !containers->is_array() || containers->empty()) {
    return InvalidArgumentError("spec.template.spec.containers: at least one container is required");
  }
  if (auto rp = ps.find("restartPolicy"); rp != ps.end() && !rp->is_null()) {
    if (!rp->is_string() || rp->get<std::string>() != "Never") {
      return InvalidArgumentError(
          "spec.template.spec.restartPolicy: must be Never or unset (the operator restarts the "
          "whole gang; a container restarted in place would rejoin a dead rendezvous)");
    }
  }
  if (auto g = ps.find("terminationGracePeriodSeconds"); g != ps.end() && !g->is_null()) {
    if (!g->is_number_integer() || g->get<int64_t>() < 0) {
      return InvalidArgumentError(
          "spec.template.spec.terminationGracePeriodSeconds: expected a non-negative integer");
    }
  }
  int64_t gpu_requested = 0;
  for (size_t i = 0; i < containers->size(); ++i) {
    const json::Json& c = (*containers)[i];
    const std::string path = fmt::format("spec.template.spec.containers[{}]", i);
    if (!c.is_object()) return InvalidArgumentError(fmt::format("{}: expected object", path));
    auto name = c.find("name");
    if (name == c.end() || !name->is_string() || name->get<std::string>().empty()) {
      return InvalidArgumentError(fmt::format("{}.name: required field missing", path));
    }
    auto image = c.find("image");
    if (image == c.end() || !image->is_string() || image->get<std::string>().empty()) {
      return InvalidArgumentError(fmt::format("{}.image: required field missing", path));
    }
    if (auto env = c.find("env"); env != c.end() && !env->is_null() && !env->is_array()) {
      return InvalidArgumentError(fmt::format("{}.env: expected array", path));
    }
    auto res = c.find("resources");
    if (res == c.end() || !res->is_object()) continue;
    for (const char* kind : {"limits", "requests"}) {
      auto m = res->find(kind);
      if (m == res->end() || !m->is_object()) continue;
      for (auto it = m->begin(); it != m->end(); ++it) {
        if (it.key().rfind("nvidia.com/", 0) != 0) continue;
        if (it.key() != kGpuResource || std::string_view(kind) != "limits") continue;
        auto q = WholeQuantity(*it);
        if (!q) {
          return InvalidArgumentError(fmt::format("{}.resources.limits[{}]: expected a whole number",
                                                  path, it.key()));
        }
        gpu_requested += *q;
      }
    }
  }
  // A template that names GPUs itself must agree with gpusPerReplica (the extender and
  // the printer columns trust gpusPerReplica); MIG resources are taken as written.
  if (gpu_requested > 0 && gpu_requested != spec.gpus_per_replica) {
    return InvalidArgumentError(fmt::format(
        "spec.template: containers request {} {} in total but gpusPerReplica is {}", gpu_requested,
        kGpuResource, spec.gpus_per_replica));
  }
  return OkStatus();
}

}  // namespace

Status ValidateName(const std::string& name) {
  // DNS-1035 label: the name becomes the headless Service's name and the pods' subdomain.
  bool ok = !name.empty() && name.size() <= kMaxJobNameLength && std::islower(static_cast<unsigned char>(name.front())) &&
            name.back() != '-';
  for (char c : name) {
    if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '-')) ok = false;
  }
  if (!ok) {
    return InvalidArgumentError(fmt::format(
        "metadata.name: \"{}\" must be a DNS-1035 label of at most {} characters (lower-case "
        "letters, digits and '-', starting with a letter): it names the Service and the pods' hostnames",
        name, kMaxJobNameLength));
  }
  return OkStatus();
}

int64_t TemplateGraceSeconds(const json::Json& pod_template) {
  if (!pod_template.is_object()) return kDefaultTerminationGraceSeconds;
  auto spec = pod_template.find("spec");
  if (spec == pod_template.end() || !spec->is_object()) return kDefaultTerminationGraceSeconds;
  auto g = spec->find("terminationGracePeriodSeconds");
  if (g == spec->end() || !g->is_number_integer()) return kDefaultTerminationGraceSeconds;
  return g->get<int64_t>();
}

Status ValidateSpec(const TrainingJobSpec& spec) {
  if (spec.replicas < 1 || spec.replicas > kMaxReplicas) {
    return InvalidArgumentError(
        fmt::format("spec.replicas: {} is outside [1, {}]", spec.replicas, kMaxReplicas));
  }
  if (spec.gpus_per_replica < 1 || spec.gpus_per_replica > kMaxGpusPerReplica) {
    return InvalidArgumentError(fmt::format(
        "spec.gpusPerReplica: {} is outside [1, {}] (a replica is one pod on one node)",
        spec.gpus_per_replica, kMaxGpusPerReplica));
  }
  const GangSpec& gang = spec.scheduling.gang;
  if (gang.min_members && (*gang.min_members < 1 || *gang.min_members > spec.replicas)) {
    return InvalidArgumentError(fmt::format("spec.scheduling.gang.minMembers: {} is outside [1, replicas={}]",
                                            *gang.min_members, spec.replicas));
  }
  if (gang.timeout_seconds && *gang.timeout_seconds < 1) {
    return InvalidArgumentError("spec.scheduling.gang.timeoutSeconds: must be at least 1");
  }
  if (const std::string& q = spec.scheduling.queue; !q.empty()) {
    const bool label = q.size() <= 63 && q.front() != '-' && q.back() != '-' &&
                       std::all_of(q.begin(), q.end(), [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; });
    if (!label) {
      return InvalidArgumentError(fmt::format(
          "spec.scheduling.queue: \"{}\" must be a GpuQueue name (lowercase letters, digits, '-', 1-63)", q));
    }
  }
  const TopologySpec& topo = spec.scheduling.topology;
  if (!topo.mode.empty() && topo.mode != "required" && topo.mode != "preferred") {
    return InvalidArgumentError(fmt::format(
        "spec.scheduling.topology.mode: \"{}\" is not one of required, preferred", topo.mode));
  }
  if (!topo.mode.empty() && topo.level.empty()) {
    return InvalidArgumentError("spec.scheduling.topology.level: required when mode is set");
  }
  const CheckpointSpec& ck = spec.checkpoint;
  if (ck.flush_seconds < 0) return InvalidArgumentError("spec.checkpoint.flushSeconds: must be >= 0");
  if (ck.expected_interval_seconds < 0) {
    return InvalidArgumentError("spec.checkpoint.expectedIntervalSeconds: must be >= 0");
  }
  PHX_RETURN_IF_ERROR(ValidateTemplate(spec));
  // A save on SIGTERM must finish before the kubelet's SIGKILL.
  const int64_t grace = TemplateGraceSeconds(spec.pod_template);
  if (ck.flush_seconds > grace) {
    return InvalidArgumentError(fmt::format(
        "spec.checkpoint.flushSeconds: {} exceeds spec.template.spec.terminationGracePeriodSeconds "
        "({}): a save on SIGTERM would be killed before it finishes",
        ck.flush_seconds, grace));
  }
  const FailurePolicy& fp = spec.failure_policy;
  if (fp.max_failures < 0) return InvalidArgumentError("spec.failurePolicy.maxFailures: must be >= 0");
  if (fp.max_disruptions && *fp.max_disruptions < 0) {
    return InvalidArgumentError("spec.failurePolicy.maxDisruptions: must be >= 0");
  }
  if (fp.backoff.initial_seconds < 0) {
    return InvalidArgumentError("spec.failurePolicy.backoff.initialSeconds: must be >= 0");
  }
  if (fp.backoff.max_seconds < fp.backoff.initial_seconds) {
    return InvalidArgumentError(fmt::format(
        "spec.failurePolicy.backoff.maxSeconds: {} is below initialSeconds ({})",
        fp.backoff.max_seconds, fp.backoff.initial_seconds));
  }
  const RunPolicy& rp = spec.run_policy;
  if (rp.active_deadline_seconds && *rp.active_deadline_seconds < 1) {
    return InvalidArgumentError("spec.runPolicy.activeDeadlineSeconds: must be at least 1");
  }
  if (rp.ttl_seconds_after_finished && *rp.ttl_seconds_after_finished < 0) {
    return InvalidArgumentError("spec.runPolicy.ttlSecondsAfterFinished: must be >= 0");
  }
  return OkStatus();
}

}  // namespace phalanx::op
