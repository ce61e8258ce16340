#include "operator/reconcile/desired_state.h"

#include <cstdint>

#include <fmt/format.h>

#include "operator/api/keys.h"

namespace phalanx::op {

using json::Json;

std::string PodName(const std::string& job, int32_t attempt, int32_t index) {
  return fmt::format("{}-a{}-{}", job, attempt, index);
}

std::string GangName(const std::string& job, int32_t attempt) { return fmt::format("{}-a{}", job, attempt); }

std::string MasterAddr(const TrainingJob& job, int32_t attempt) {
  return fmt::format("{}.{}.{}.svc", PodName(job.meta.name, attempt, 0), job.meta.name, job.meta.namespace_);
}

std::string JobSelector(const std::string& job) { return fmt::format("{}={}", kLabelJobName, job); }

std::string SpecHash(const TrainingJobSpec& spec) {
  Json shaping = {{"replicas", spec.replicas},
                  {"gpusPerReplica", spec.gpus_per_replica},
                  {"template", spec.pod_template},
                  {"priorityClassName", spec.scheduling.priority_class_name},
                  {"minMembers", spec.MinMembers()},
                  {"gangTimeout", spec.scheduling.gang.timeout_seconds.value_or(0)},
                  {"topology", {spec.scheduling.topology.level, spec.scheduling.topology.mode}},
                  {"checkpoint", {spec.checkpoint.dir, spec.checkpoint.flush_seconds}}};
  // nlohmann's dump sorts object keys, so equal specs give equal bytes.
  const std::string bytes = json::Dump(shaping);
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return fmt::format("{:016x}", h);
}

Json OwnerReference(const TrainingJob& job) {
  return {{"apiVersion", kApiVersion}, {"kind", kKind},         {"name", job.meta.name},
          {"uid", job.meta.uid},       {"controller", true}, {"blockOwnerDeletion", true}};
}

namespace {

// Replaces (or appends) env var `name` in a container's env array.
void SetEnv(Json& env, const std::string& name, const std::string& value) {
  for (Json& e : env) {
    if (e.is_object() && e.value("name", std::string()) == name) {
      e = Json{{"name", name}, {"value", value}};
      return;
    }
  }
  env.push_back(Json{{"name", name}, {"value", value}});
}

void AddVolumeMount(Json& container, const std::string& name, const std::string& path) {
  Json& mounts = container["volumeMounts"];
  if (!mounts.is_array()) mounts = Json::array();
  for (const Json& m : mounts) {
    if (m.is_object() && m.value("name", std::string()) == name) return;
  }
  mounts.push_back(Json{{"name", name}, {"mountPath", path}, {"readOnly", true}});
}

bool RequestsGpuResource(const Json& containers) {
  for (const Json& c : containers) {
    auto res = c.find("resources");
    if (res == c.end() || !res->is_object()) continue;
    for (const char* kind : {"limits", "requests"}) {
      auto m = res->find(kind);
      if (m == res->end() || !m->is_object()) continue;
      for (auto it = m->begin(); it != m->end(); ++it) {
        if (it.key().rfind("nvidia.com/", 0) == 0) return true;
      }
    }
  }
  return false;
}

}  // namespace

Json BuildPod(const TrainingJob& job, const AttemptContext& ctx, int32_t index, const PodOptions& options) {
  const TrainingJobSpec& spec = job.spec;
  const std::string name = PodName(job.meta.name, ctx.attempt, index);
  const std::string master = MasterAddr(job, ctx.attempt);
  Json pod = {{"apiVersion", "v1"}, {"kind", "Pod"}};
  Json meta = spec.pod_template.contains("metadata") && spec.pod_template["metadata"].is_object()
                  ? spec.pod_template["metadata"]
                  : Json::object();
  // Template metadata may carry labels/annotations; identity fields are the operator's.
  for (const char* k : {"name", "generateName", "namespace", "uid", "resourceVersion", "ownerReferences",
                        "finalizers", "creationTimestamp", "deletionTimestamp"}) {
    meta.erase(k);
  }
  meta["name"] = name;
  meta["namespace"] = job.meta.namespace_;
  Json& labels = meta["labels"];
  if (!labels.is_object()) labels = Json::object();
  labels[std::string(kLabelJobName)] = job.meta.name;
  labels[std::string(kLabelAttempt)] = std::to_string(ctx.attempt);
  labels[std::string(kLabelReplicaIndex)] = std::to_string(index);
  labels[std::string(kLabelGang)] = GangName(job.meta.name, ctx.attempt);
  // The extender's team queue (docs/user-guide.md §7). Not part of SpecHash: a changed queue
  // applies from the next attempt, running pods are not restarted for it.
  if (!spec.scheduling.queue.empty()) labels[std::string(kLabelQueue)] = spec.scheduling.queue;
  Json& ann = meta["annotations"];
  if (!ann.is_object()) ann = Json::object();
  ann[std::string(kAnnotationGangMinMembers)] = std::to_string(spec.MinMembers());
  if (spec.scheduling.gang.timeout_seconds) {
    ann[std::string(kAnnotationGangTimeout)] = std::to_string(*spec.scheduling.gang.timeout_seconds);
  }
  if (!spec.scheduling.topology.level.empty()) {
    ann[std::string(kAnnotationTopology)] = spec.scheduling.topology.level;
    if (!spec.scheduling.topology.mode.empty()) {
      ann[std::string(kAnnotationTopologyMode)] = spec.scheduling.topology.mode;
    }
  }
  ann[std::string(kAnnotationSpecHash)] = SpecHash(spec);
  meta["ownerReferences"] = Json::array({OwnerReference(job)});
  meta["finalizers"] = Json::array({std::string(kFinalizerCheckpoint)});
  pod["metadata"] = std::move(meta);

  Json ps = spec.pod_template["spec"];
  ps.erase("nodeName");
  ps["restartPolicy"] = "Never";
  ps["hostname"] = name;
  ps["subdomain"] = job.meta.name;
  if (!ps.contains("schedulerName")) ps["schedulerName"] = kDefaultSchedulerName;
  if (!spec.scheduling.priority_class_name.empty()) {
    ps["priorityClassName"] = spec.scheduling.priority_class_name;
    ps.erase("priority");  // admission fills it from the class; a stale value is rejected
  }
  Json& gates = ps["schedulingGates"];
  if (!gates.is_array()) gates = Json::array();
  bool gated = false;
  for (const Json& g : gates) gated = gated || (g.is_object() && g.value("name", std::string()) == kSchedulingGate);
  if (!gated) gates.push_back(Json{{"name", kSchedulingGate}});

  Json& volumes = ps["volumes"];
  if (!volumes.is_array()) volumes = Json::array();
  volumes.push_back(Json{
      {"name", kPreemptVolumeName},
      {"downwardAPI",
       {{"items", Json::array({Json{{"path", "notice"},
                                   {"fieldRef",
                                    {{"fieldPath", fmt::format("metadata.annotations['{}']",
                                                               kAnnotationPreemptNotice)}}}}})}}}});
  if (!options.progress_url.empty()) {
    volumes.push_back(Json{
        {"name", kTokenVolumeName},
        {"projected",
         {{"sources", Json::array({Json{{"serviceAccountToken",
                                         {{"audience", kTokenAudience},
                                          {"expirationSeconds", options.token_expiration_seconds},
                                          {"path", "token"}}}}})}}}});
  }

  const std::string world = std::to_string(spec.replicas);
  const std::string rank = std::to_string(index);
  const std::string port = std::to_string(options.master_port);
  const std::pair<std::string, std::string> env_values[] = {
      {"WORLD_SIZE", world},
      {"RANK", rank},
      {"MASTER_ADDR", master},
      {"MASTER_PORT", port},
      // torchrun reads its flags from PET_<FLAG>; one node per replica, whole-gang restarts
      // belong to the operator, so torchrun itself never restarts workers.
      {"PET_NNODES", world},
      {"PET_NODE_RANK", rank},
      {"PET_NPROC_PER_NODE", std::to_string(spec.gpus_per_replica)},
      {"PET_MASTER_ADDR", master},
      {"PET_MASTER_PORT", port},
      {"PET_MAX_RESTARTS", "0"},
      {"PET_RDZV_ID", fmt::format("{}-{}-a{}", job.meta.namespace_, job.meta.name, ctx.attempt)},
      {"PHALANX_JOB_NAME", job.meta.name},
      {"PHALANX_ATTEMPT", std::to_string(ctx.attempt)},
      {"PHALANX_RESTART_REASON", ctx.restart_reason},
      {"PHALANX_CHECKPOINT_DIR", spec.checkpoint.dir},
      {"PHALANX_RESUME_FROM", ctx.resume_from},
      {"PHALANX_PREEMPT_FILE", std::string(kPreemptFile)},
  };
  Json& containers = ps["containers"];
  const bool has_gpu = RequestsGpuResource(containers);
  for (size_t i = 0; i < containers.size(); ++i) {
    Json& c = containers[i];
    Json& env = c["env"];
    if (!env.is_array()) env = Json::array();
    for (const auto& [k, v] : env_values) SetEnv(env, k, v);
    if (!options.progress_url.empty()) {
      SetEnv(env, "PHALANX_PROGRESS_URL", options.progress_url);
      SetEnv(env, "PHALANX_PROGRESS_TOKEN_FILE", fmt::format("{}/token", kTokenMountPath));
      AddVolumeMount(c, std::string(kTokenVolumeName), std::string(kTokenMountPath));
    }
    AddVolumeMount(c, std::string(kPreemptVolumeName), std::string(kPreemptMountPath));
    // The first container gets the replica's GPUs unless the template asked for some itself.
    if (i == 0 && !has_gpu) {
      c["resources"]["limits"][std::string(kGpuResource)] = std::to_string(spec.gpus_per_replica);
    }
  }
  pod["spec"] = std::move(ps);
  return pod;
}

Json BuildService(const TrainingJob& job, const PodOptions& options) {
  return {{"apiVersion", "v1"},
          {"kind", "Service"},
          {"metadata",
           {{"name", job.meta.name},
            {"namespace", job.meta.namespace_},
            {"labels", {{std::string(kLabelJobName), job.meta.name}}},
            {"ownerReferences", Json::array({OwnerReference(job)})}}},
          {"spec",
           {{"clusterIP", "None"},
            // Ranks resolve each other before they are Ready: rendezvous happens first.
            {"publishNotReadyAddresses", true},
            {"selector", {{std::string(kLabelJobName), job.meta.name}}},
            {"ports", Json::array({Json{{"name", "master"}, {"port", options.master_port}}})}}}};
}

}  // namespace phalanx::op
