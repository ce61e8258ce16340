#include "core/kube/crd_apply.h"

#include <thread>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "core/kube/api_error.h"

namespace phalanx::kube {
namespace {

// node[a][b] as text, "" when absent. (No Node assignment: in yaml-cpp it writes through.)
std::string ScalarAt(const YAML::Node& node, const char* a, const char* b = nullptr) {
  if (!node.IsMap()) return "";
  const YAML::Node child = node[a];
  if (!child) return "";
  if (b != nullptr) return ScalarAt(child, b);
  return child.IsScalar() ? child.Scalar() : std::string();
}

bool ConditionTrue(const Json& crd, std::string_view type) {
  const Json* conditions = nullptr;
  if (auto s = crd.find("status"); s != crd.end() && s->is_object()) {
    if (auto c = s->find("conditions"); c != s->end() && c->is_array()) conditions = &*c;
  }
  if (conditions == nullptr) return false;
  for (const auto& c : *conditions) {
    if (c.is_object() && c.value("type", "") == type) return c.value("status", "") == "True";
  }
  return false;
}

std::string ResourceVersionOf(const Json& object) {
  return object.contains("metadata") ? object["metadata"].value("resourceVersion", "") : "";
}

}  // namespace

std::string_view ChangeName(CrdApplyOutcome::Change change) {
  switch (change) {
    case CrdApplyOutcome::Change::kCreated: return "created";
    case CrdApplyOutcome::Change::kUpdated: return "updated";
    case CrdApplyOutcome::Change::kUnchanged: return "unchanged";
  }
  return "unchanged";
}

Result<std::string> CheckCrdManifest(std::string_view yaml) {
  YAML::Node doc;
  try {
    doc = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(fmt::format("not YAML: {}", e.what()));
  }
  if (!doc.IsMap()) return InvalidArgumentError("not a YAML mapping");
  const YAML::Node& crd = doc;
  if (ScalarAt(crd, "apiVersion") != "apiextensions.k8s.io/v1" || ScalarAt(crd, "kind") != "CustomResourceDefinition") {
    return InvalidArgumentError(fmt::format("apiVersion/kind: want apiextensions.k8s.io/v1 CustomResourceDefinition, got {} {}",
                                            ScalarAt(crd, "apiVersion"), ScalarAt(crd, "kind")));
  }
  const std::string name = ScalarAt(crd, "metadata", "name");
  const YAML::Node spec = crd["spec"];
  const std::string expected = ScalarAt(spec, "names", "plural") + "." + ScalarAt(spec, "group");
  if (name.empty()) return InvalidArgumentError("metadata.name: required");
  if (name != expected) {
    return InvalidArgumentError(fmt::format("metadata.name: {} must be spec.names.plural + \".\" + spec.group ({})",
                                            name, expected));
  }
  const YAML::Node versions = spec.IsMap() ? spec["versions"] : YAML::Node();
  if (!versions || !versions.IsSequence() || versions.size() == 0) {
    return InvalidArgumentError(fmt::format("{}: spec.versions: at least one version required", name));
  }
  return name;
}

Result<std::vector<CrdApplyOutcome>> ApplyCrds(KubeClient& client, const std::vector<std::string>& manifests,
                                               const CrdApplyOptions& options) {
  std::vector<std::string> names;
  for (size_t i = 0; i < manifests.size(); ++i) {
    auto name = CheckCrdManifest(manifests[i]);
    if (!name.ok()) return InvalidArgumentError(fmt::format("CRD manifest {}: {}", i, name.status().message()));
    names.push_back(*name);
  }
  std::vector<CrdApplyOutcome> outcomes;
  for (size_t i = 0; i < manifests.size(); ++i) {
    const std::string& name = names[i];
    std::string before;
    if (auto existing = client.Get(resources::kCustomResourceDefinitions, "", name); existing.ok()) {
      before = ResourceVersionOf(*existing);
    } else if (!IsNotFound(existing.status())) {
      return Status(existing.status().code(), fmt::format("{}: get: {}", name, existing.status().message()));
    }
    PatchOptions patch;
    patch.field_manager = options.field_manager;
    patch.force = true;  // this release's definition wins over an older field manager's
    auto applied = client.Patch(resources::kCustomResourceDefinitions, "", name, PatchType::kApply, std::string_view(manifests[i]), patch);
    if (!applied.ok()) {
      return Status(applied.status().code(), fmt::format("{}: apply: {}", name, applied.status().message()));
    }
    CrdApplyOutcome outcome;
    outcome.name = name;
    outcome.change = before.empty()                          ? CrdApplyOutcome::Change::kCreated
                     : ResourceVersionOf(*applied) != before ? CrdApplyOutcome::Change::kUpdated
                                                             : CrdApplyOutcome::Change::kUnchanged;
    outcome.generation = applied->contains("metadata") ? (*applied)["metadata"].value("generation", int64_t{0}) : 0;
    // Custom resources of a new or changed CRD are served once it is Established.
    const auto deadline = std::chrono::steady_clock::now() + options.established_timeout;
    Json current = std::move(applied).value();
    while (!(ConditionTrue(current, "Established") && ConditionTrue(current, "NamesAccepted"))) {
      if (std::chrono::steady_clock::now() >= deadline) {
        return DeadlineExceededError(fmt::format("{}: not Established and NamesAccepted after {} ms", name,
                                                 options.established_timeout.count()));
      }
      std::this_thread::sleep_for(options.poll_interval);
      auto again = client.Get(resources::kCustomResourceDefinitions, "", name);
      if (!again.ok()) return Status(again.status().code(), fmt::format("{}: get: {}", name, again.status().message()));
      current = std::move(again).value();
    }
    outcomes.push_back(std::move(outcome));
  }
  return outcomes;
}

}  // namespace phalanx::kube
