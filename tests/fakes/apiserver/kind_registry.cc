#include "tests/fakes/apiserver/kind_registry.h"

#include <algorithm>

namespace phalanx::fakes::apiserver {
namespace {

KindInfo Kind(std::string group, std::string version, std::string plural, std::string kind,
              bool namespaced, bool has_status, bool has_scale = false) {
  KindInfo k;
  k.group = std::move(group);
  k.version = std::move(version);
  k.plural = std::move(plural);
  k.kind = std::move(kind);
  k.namespaced = namespaced;
  k.has_status = has_status;
  k.has_scale = has_scale;
  return k;
}

}  // namespace

bool KindInfo::Serves(std::string_view v) const {
  if (v == version) return true;
  return std::find(versions.begin(), versions.end(), v) != versions.end();
}

KindRegistry::KindRegistry() {
  const bool ns = true, cluster = false, status = true, no_status = false;
  for (auto& k : {
           Kind("", "v1", "pods", "Pod", ns, status),
           Kind("", "v1", "nodes", "Node", cluster, status),
           Kind("", "v1", "namespaces", "Namespace", cluster, status),
           Kind("", "v1", "services", "Service", ns, status),
           Kind("", "v1", "endpoints", "Endpoints", ns, no_status),
           Kind("", "v1", "events", "Event", ns, no_status),
           Kind("", "v1", "configmaps", "ConfigMap", ns, no_status),
           Kind("", "v1", "secrets", "Secret", ns, no_status),
           Kind("", "v1", "serviceaccounts", "ServiceAccount", ns, no_status),
           Kind("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", ns, status),
           Kind("", "v1", "persistentvolumes", "PersistentVolume", cluster, status),
           Kind("apps", "v1", "deployments", "Deployment", ns, status, true),
           Kind("apps", "v1", "statefulsets", "StatefulSet", ns, status, true),
           Kind("apps", "v1", "replicasets", "ReplicaSet", ns, status, true),
           Kind("apps", "v1", "daemonsets", "DaemonSet", ns, status),
           Kind("batch", "v1", "jobs", "Job", ns, status),
           Kind("coordination.k8s.io", "v1", "leases", "Lease", ns, no_status),
           Kind("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", cluster, no_status),
           Kind("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", ns, status),
           Kind("events.k8s.io", "v1", "events", "Event", ns, no_status),
           Kind("apiextensions.k8s.io", "v1", "customresourcedefinitions",
                "CustomResourceDefinition", cluster, status),
           Kind("authentication.k8s.io", "v1", "tokenreviews", "TokenReview", cluster, no_status),
           Kind("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations",
                "MutatingWebhookConfiguration", cluster, no_status),
           Kind("phalanx.io", "v1alpha1", "trainingjobs", "TrainingJob", ns, status, true),
       }) {
    kinds_.emplace(k.storage_key(), k);
  }
}

void KindRegistry::Register(KindInfo info) {
  std::lock_guard<std::mutex> lock(mu_);
  auto key = info.storage_key();
  kinds_[key] = std::move(info);
}

Status KindRegistry::RegisterCrd(const json::Json& crd) {
  const json::Json* spec = crd.contains("spec") ? &crd["spec"] : nullptr;
  if (spec == nullptr || !spec->is_object()) return InvalidArgumentError("spec: required");
  PHX_ASSIGN_OR_RETURN(std::string group, json::GetString(*spec, "group", "spec"));
  PHX_ASSIGN_OR_RETURN(const json::Json* names, json::GetObject(*spec, "names", "spec"));
  PHX_ASSIGN_OR_RETURN(std::string plural, json::GetString(*names, "plural", "spec.names"));
  PHX_ASSIGN_OR_RETURN(std::string kind, json::GetString(*names, "kind", "spec.names"));
  PHX_ASSIGN_OR_RETURN(const json::Json* versions, json::GetArray(*spec, "versions", "spec"));
  KindInfo info;
  info.group = group;
  info.plural = plural;
  info.kind = kind;
  info.namespaced = spec->value("scope", std::string("Namespaced")) != "Cluster";
  for (const auto& v : *versions) {
    if (!v.is_object() || !v.contains("name") || !v["name"].is_string()) {
      return InvalidArgumentError("spec.versions[]: name required");
    }
    const std::string name = v["name"].get<std::string>();
    info.versions.push_back(name);
    const bool storage = v.value("storage", false);
    if (info.version.empty() || storage) info.version = name;
    if (v.contains("schema") && v["schema"].is_object() && v["schema"].contains("openAPIV3Schema") &&
        v["schema"]["openAPIV3Schema"].is_object()) {
      info.schemas[name] = std::make_shared<const json::Json>(v["schema"]["openAPIV3Schema"]);
    }
    if (v.contains("subresources") && v["subresources"].is_object()) {
      if (v["subresources"].contains("status")) info.has_status = true;
      if (v["subresources"].contains("scale")) info.has_scale = true;
    }
  }
  if (info.version.empty()) return InvalidArgumentError("spec.versions: at least one required");
  Register(std::move(info));
  return OkStatus();
}

std::optional<KindInfo> KindRegistry::Find(std::string_view group, std::string_view version,
                                           std::string_view plural) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = kinds_.find(std::string(group) + "/" + std::string(plural));
  if (it == kinds_.end() || !it->second.Serves(version)) return std::nullopt;
  return it->second;
}

std::optional<KindInfo> KindRegistry::FindByName(std::string_view resource_name) const {
  const auto dot = resource_name.find('.');
  const std::string_view plural = resource_name.substr(0, dot);
  const std::string_view group =
      dot == std::string_view::npos ? std::string_view() : resource_name.substr(dot + 1);
  return FindByStorageKey(std::string(group) + "/" + std::string(plural));
}

std::optional<KindInfo> KindRegistry::FindByStorageKey(std::string_view key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = kinds_.find(key);
  if (it == kinds_.end()) return std::nullopt;
  return it->second;
}

std::optional<KindInfo> KindRegistry::FindByKind(std::string_view api_version,
                                                 std::string_view kind) const {
  const auto slash = api_version.find('/');
  const std::string_view group =
      slash == std::string_view::npos ? std::string_view() : api_version.substr(0, slash);
  const std::string_view version =
      slash == std::string_view::npos ? api_version : api_version.substr(slash + 1);
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [key, info] : kinds_) {
    if (info.group == group && info.kind == kind && info.Serves(version)) return info;
  }
  return std::nullopt;
}

bool KindRegistry::IsNamespacedPlural(std::string_view group, std::string_view plural) const {
  auto k = FindByStorageKey(std::string(group) + "/" + std::string(plural));
  return k.has_value() && k->namespaced;
}

std::vector<KindInfo> KindRegistry::All() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<KindInfo> out;
  for (const auto& [key, info] : kinds_) out.push_back(info);
  return out;
}

}  // namespace phalanx::fakes::apiserver
