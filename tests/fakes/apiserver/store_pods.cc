// The Store's pod-specific rules: create defaults and admission, update validation, the
// binding and eviction subresources (eviction with PodDisruptionBudgets).
#include <algorithm>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "tests/fakes/apiserver/disruption_budget.h"
#include "tests/fakes/apiserver/store.h"
#include "tests/fakes/apiserver/store_internal.h"

namespace phalanx::fakes::apiserver {
namespace {

std::vector<std::string> GateNames(const json::Json& pod) {
  std::vector<std::string> names;
  auto spec = pod.find("spec");
  if (spec == pod.end() || !spec->is_object()) return names;
  auto gates = spec->find("schedulingGates");
  if (gates == spec->end() || !gates->is_array()) return names;
  for (const auto& g : *gates) {
    if (g.is_object() && g.contains("name") && g["name"].is_string()) {
      names.push_back(g["name"].get<std::string>());
    }
  }
  return names;
}

// Replaces (or adds) the condition of the same type; lastTransitionTime changes only when the
// status does, as the kubelet and scheduler do.
void SetCondition(json::Json& pod, json::Json condition, const std::string& now) {
  json::Json& status = pod["status"];
  if (!status.is_object()) status = json::Json::object();
  json::Json& conditions = status["conditions"];
  if (!conditions.is_array()) conditions = json::Json::array();
  for (auto& c : conditions) {
    if (c.is_object() && c.value("type", "") == condition["type"]) {
      condition["lastTransitionTime"] =
          c.value("status", "") == condition["status"] ? c.value("lastTransitionTime", now) : now;
      c = std::move(condition);
      return;
    }
  }
  condition["lastTransitionTime"] = now;
  conditions.push_back(std::move(condition));
}

// The parts of a pod spec an update may change: container images, activeDeadlineSeconds,
// tolerations (the real server allows only additions) and schedulingGates (only removals,
// checked separately). Everything else must stay equal.
json::Json MutableSpecStripped(json::Json spec) {
  if (!spec.is_object()) return spec;
  for (const char* list : {"containers", "initContainers"}) {
    if (spec.contains(list) && spec[list].is_array()) {
      for (auto& c : spec[list]) {
        if (c.is_object()) c.erase("image");
      }
    }
  }
  spec.erase("activeDeadlineSeconds");
  spec.erase("tolerations");
  spec.erase("schedulingGates");
  return spec;
}

}  // namespace

ApiResult<ObjectPtr> Store::AdmitPodCreate(json::Json& pod) {
  const std::string name = internal::MetaString(pod, "name");
  if (!pod.contains("spec") || !pod["spec"].is_object()) {
    return Invalid("", "Pod", name, "spec.containers: Required value");
  }
  json::Json& spec = pod["spec"];
  if (!spec.contains("schedulerName")) spec["schedulerName"] = "default-scheduler";
  if (!spec.contains("terminationGracePeriodSeconds")) spec["terminationGracePeriodSeconds"] = 30;
  if (!spec.contains("restartPolicy")) spec["restartPolicy"] = "Always";
  // Priority admission: spec.priority from the PriorityClass when it exists. (The real server
  // rejects an unknown class; the fake leaves priority unset so tests need not create classes.)
  if (spec.contains("priorityClassName") && spec["priorityClassName"].is_string()) {
    auto classes = tables_.find("scheduling.k8s.io/priorityclasses");
    if (classes != tables_.end()) {
      auto it = classes->second.objects.find("/" + spec["priorityClassName"].get<std::string>());
      if (it != classes->second.objects.end()) {
        const json::Json pc = it->second->Parse();
        if (pc.contains("value")) spec["priority"] = pc["value"];
      }
    }
  }
  pod["status"] = {{"phase", "Pending"}};
  if (!GateNames(pod).empty()) {
    SetCondition(pod,
                 {{"type", "PodScheduled"},
                  {"status", "False"},
                  {"reason", "SchedulingGated"},
                  {"message", "Scheduling is blocked due to non-empty scheduling gates"}},
                 Now());
  }
  return ObjectPtr{};
}

std::optional<ApiError> Store::ValidatePodUpdate(const json::Json& old_pod,
                                                 const json::Json& new_pod) {
  const std::string name = internal::MetaString(old_pod, "name");
  const auto old_gates = GateNames(old_pod);
  for (const auto& gate : GateNames(new_pod)) {
    if (std::find(old_gates.begin(), old_gates.end(), gate) == old_gates.end()) {
      return Invalid("", "Pod", name,
                     fmt::format("spec.schedulingGates: Forbidden: only deletion is allowed, but "
                                 "found new scheduling gate '{}'",
                                 gate));
    }
  }
  const json::Json empty = json::Json::object();
  const json::Json& old_spec = old_pod.contains("spec") ? old_pod["spec"] : empty;
  const json::Json& new_spec = new_pod.contains("spec") ? new_pod["spec"] : empty;
  if (MutableSpecStripped(old_spec) != MutableSpecStripped(new_spec)) {
    return Invalid("", "Pod", name,
                   "spec: Forbidden: pod updates may not change fields other than "
                   "`spec.containers[*].image`, `spec.initContainers[*].image`, "
                   "`spec.activeDeadlineSeconds`, `spec.tolerations` (only additions to existing "
                   "tolerations) or `spec.schedulingGates` (only deletions)");
  }
  return std::nullopt;
}

ApiResult<ObjectPtr> Store::Bind(const std::string& namespace_, const std::string& name,
                                 const json::Json& binding) {
  std::lock_guard<std::mutex> lock(mu_);
  auto kind = kinds_.FindByStorageKey("/pods");
  Table& table = TableFor(*kind);
  auto it = table.objects.find(namespace_ + "/" + name);
  if (it == table.objects.end()) return NotFound("", "pods", name);
  const ObjectPtr current = it->second;
  if (!binding.is_object() || !binding.contains("target") || !binding["target"].is_object() ||
      binding["target"].value("name", "").empty()) {
    return Invalid("", "Binding", name, "target.name: Required value");
  }
  const std::string body_name = internal::MetaString(binding, "name");
  if (!body_name.empty() && body_name != name) {
    return BadRequest(fmt::format(
        "the name of the object ({}) does not match the name on the URL ({})", body_name, name));
  }
  // Preconditions as the real BindingREST: checked by storage before anything else, a mismatch
  // is a storage "invalid object" error answered as 409 on pods.
  const std::string uid = internal::MetaString(binding, "uid");
  const std::string rv = internal::MetaString(binding, "resourceVersion");
  auto precondition_failed = [&](const char* what, const std::string& wanted, const std::string& actual) {
    return Conflict("", "pods", name,
                    fmt::format("StorageError: invalid object, Code: 4, Key: /registry/pods/{}/{}, "
                                "ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: {} in "
                                "precondition: {}, {} in object meta: {}",
                                namespace_, name, what, wanted, what, actual));
  };
  if (!uid.empty() && uid != current->uid) return precondition_failed("UID", uid, current->uid);
  if (!rv.empty() && rv != std::to_string(current->resource_version)) {
    return precondition_failed("ResourceVersion", rv, std::to_string(current->resource_version));
  }
  const std::string node = binding["target"]["name"].get<std::string>();
  json::Json pod = current->Parse();
  if (current->terminating) {
    return Conflict("", "pods/binding", name,
                    fmt::format("pod {} is being deleted, cannot be assigned to a host", name));
  }
  if (!current->node_name.empty()) {
    return Conflict("", "pods/binding", name,
                    fmt::format("pod {} is already assigned to node \"{}\"", name, current->node_name));
  }
  if (!GateNames(pod).empty()) {
    return Conflict("", "pods/binding", name,
                    fmt::format("pod {} has non-empty .spec.schedulingGates", name));
  }
  pod["spec"]["nodeName"] = node;
  if (binding.contains("metadata") && binding["metadata"].is_object() &&
      binding["metadata"].contains("annotations") && binding["metadata"]["annotations"].is_object()) {
    json::Json& annotations = internal::Meta(pod)["annotations"];
    if (!annotations.is_object()) annotations = json::Json::object();
    for (const auto& [k, v] : binding["metadata"]["annotations"].items()) annotations[k] = v;
  }
  SetCondition(pod, {{"type", "PodScheduled"}, {"status", "True"}}, Now());
  return Commit(table, std::move(pod), current);
}

ApiResult<ObjectPtr> Store::Evict(const std::string& namespace_, const std::string& name,
                                  const json::Json& eviction) {
  std::lock_guard<std::mutex> lock(mu_);
  auto kind = kinds_.FindByStorageKey("/pods");
  Table& table = TableFor(*kind);
  auto it = table.objects.find(namespace_ + "/" + name);
  if (it == table.objects.end()) return NotFound("", "pods", name);
  ObjectPtr current = it->second;
  if (!eviction.is_object()) return BadRequest("the body of the request must be an Eviction");
  const std::string body_name = internal::MetaString(eviction, "name");
  if (!body_name.empty() && body_name != name) {
    return BadRequest("name in URL does not match name in Eviction object");
  }
  DeleteOptions options;
  if (eviction.contains("deleteOptions") && eviction["deleteOptions"].is_object()) {
    const json::Json& d = eviction["deleteOptions"];
    if (d.contains("gracePeriodSeconds") && d["gracePeriodSeconds"].is_number_integer()) {
      options.grace_period_seconds = d["gracePeriodSeconds"].get<int64_t>();
    }
    if (d.contains("preconditions") && d["preconditions"].is_object()) {
      const json::Json& p = d["preconditions"];
      if (p.contains("uid") && p["uid"].is_string()) options.precondition_uid = p["uid"].get<std::string>();
      if (p.contains("resourceVersion") && p["resourceVersion"].is_string()) {
        options.precondition_resource_version = p["resourceVersion"].get<std::string>();
      }
    }
  }
  if (options.precondition_uid && *options.precondition_uid != current->uid) {
    return Conflict("", "pods", name,
                    fmt::format("Precondition failed: UID in precondition: {}, UID in object meta: {}",
                                *options.precondition_uid, current->uid));
  }
  if (options.precondition_resource_version &&
      *options.precondition_resource_version != std::to_string(current->resource_version)) {
    return Conflict("", "pods", name,
                    fmt::format("Precondition failed: ResourceVersion in precondition: {}, "
                                "ResourceVersion in object meta: {}",
                                *options.precondition_resource_version, current->resource_version));
  }
  if (current->terminating) return current;  // already going away: nothing to do
  if (auto refused = CheckDisruptionBudgetsLocked(current)) return *refused;
  if (options_.eviction_disruption_condition) {
    json::Json pod = current->Parse();
    SetCondition(pod,
                 {{"type", "DisruptionTarget"},
                  {"status", "True"},
                  {"reason", "EvictionByEvictionAPI"},
                  {"message", "Eviction API: evicting"}},
                 Now());
    current = Commit(table, std::move(pod), current);
  }
  auto deleted = DeleteLocked(table, current, options);
  if (!IsOk(deleted)) return std::get<ApiError>(deleted);
  return std::get<DeleteResult>(deleted).object;
}

std::optional<ApiError> Store::CheckDisruptionBudgetsLocked(const ObjectPtr& pod) {
  if (EvictionIgnoresBudgets(*pod)) return std::nullopt;
  auto budgets = tables_.find("policy/poddisruptionbudgets");
  auto pods = tables_.find("/pods");
  if (budgets == tables_.end() || pods == tables_.end()) return std::nullopt;
  const std::string prefix = pod->namespace_ + "/";
  auto in_namespace = [&prefix](const Table& table, auto&& each) {
    for (auto it = table.objects.lower_bound(prefix);
         it != table.objects.end() && it->first.starts_with(prefix); ++it) {
      each(it->second);
    }
  };
  json::Json budget;
  std::optional<LabelSelector> selector;
  int matched = 0;
  in_namespace(budgets->second, [&](const ObjectPtr& candidate) {
    json::Json parsed = candidate->Parse();
    auto s = BudgetSelector(parsed);
    if (!s || !s->Matches(*pod)) return;
    if (++matched == 1) {
      budget = std::move(parsed);
      selector = std::move(s);
    }
  });
  if (matched == 0) return std::nullopt;
  if (matched > 1) return MultipleBudgetsError();
  std::vector<json::Json> selected;
  in_namespace(pods->second, [&](const ObjectPtr& candidate) {
    if (selector->Matches(*candidate)) selected.push_back(candidate->Parse());
  });
  return CheckEviction(budget, ComputeBudgetStatus(budget, selected, ControllersScaleLocked(selected)),
                       PodReady(pod->Parse()));
}

// Simplified from the disruption controller's finders: the owner's own spec.replicas (a
// ReplicaSet's, not its Deployment's), for any kind the fake stores.
std::optional<int64_t> Store::ControllersScaleLocked(const std::vector<json::Json>& pods) {
  std::set<std::string> counted;
  int64_t scale = 0;
  for (const auto& pod : pods) {
    const json::Json* controller = nullptr;
    const json::Json& meta = pod["metadata"];
    if (meta.contains("ownerReferences") && meta["ownerReferences"].is_array()) {
      for (const auto& ref : meta["ownerReferences"]) {
        if (ref.is_object() && ref.value("controller", false)) controller = &ref;
      }
    }
    if (controller == nullptr) return std::nullopt;
    const std::string uid = controller->value("uid", "");
    if (counted.count(uid) != 0) continue;
    auto kind = kinds_.FindByKind(controller->value("apiVersion", ""), controller->value("kind", ""));
    if (!kind) return std::nullopt;
    auto table = tables_.find(kind->storage_key());
    if (table == tables_.end()) return std::nullopt;
    const std::string ns = kind->namespaced ? meta.value("namespace", "") : "";
    auto owner = table->second.objects.find(ns + "/" + controller->value("name", ""));
    if (owner == table->second.objects.end() || owner->second->uid != uid) return std::nullopt;
    const json::Json object = owner->second->Parse();
    if (!object.contains("spec") || !object["spec"].is_object() ||
        !object["spec"].contains("replicas") || !object["spec"]["replicas"].is_number_integer()) {
      return std::nullopt;
    }
    scale += object["spec"]["replicas"].get<int64_t>();
    counted.insert(uid);
  }
  return scale;
}

}  // namespace phalanx::fakes::apiserver
