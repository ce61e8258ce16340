// KindRegistry: the resources the fake API server knows (group, version, plural, kind, scope,
// subresources), as a real server learns them from its built-in types and from CRDs.
//
// Storage is keyed by group + plural, not by version: every served version of a group shares one
// set of objects (the fake does no conversion; objects keep the apiVersion they were written with).
// Thread-safe: lookups and registrations take an internal mutex; KindInfo values are copies.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/result.h"
#include "core/json/json.h"

namespace phalanx::fakes::apiserver {

struct KindInfo {
  std::string group;    // "" for the core group (/api/v1)
  std::string version;  // preferred version, used for apiVersion when an object has none
  std::string plural;   // "pods"
  std::string kind;     // "Pod"
  bool namespaced = true;
  bool has_status = false;  // status subresource: main endpoint ignores status, /status only status
  bool has_scale = false;   // scale subresource mapped to spec.replicas / status.replicas
  std::vector<std::string> versions;  // all served versions (empty = just `version`)
  // CRD kinds: each version's openAPIV3Schema (crd_schema.h validates objects against it).
  std::map<std::string, std::shared_ptr<const json::Json>> schemas;

  std::string api_version() const { return group.empty() ? version : group + "/" + version; }
  std::string list_kind() const { return kind + "List"; }
  // "pods", "trainingjobs.phalanx.io": how tests and error messages name the resource.
  std::string resource_name() const { return group.empty() ? plural : plural + "." + group; }
  // Storage key ("/pods", "phalanx.io/trainingjobs").
  std::string storage_key() const { return group + "/" + plural; }
  bool Serves(std::string_view v) const;
};

class KindRegistry {
 public:
  // Starts with the built-in kinds (core, apps, batch, coordination, scheduling, policy, events,
  // apiextensions, authentication) and phalanx.io/v1alpha1 trainingjobs.
  KindRegistry();

  // Adds or replaces the kind for (group, plural).
  void Register(KindInfo info);
  // Registers the kind described by an apiextensions.k8s.io/v1 CustomResourceDefinition object.
  Status RegisterCrd(const json::Json& crd);

  // By URL parts; the version must be served.
  std::optional<KindInfo> Find(std::string_view group, std::string_view version,
                               std::string_view plural) const;
  // By "plural" or "plural.group" (kubectl style).
  std::optional<KindInfo> FindByName(std::string_view resource_name) const;
  std::optional<KindInfo> FindByStorageKey(std::string_view key) const;
  // By apiVersion ("v1", "phalanx.io/v1alpha1") and kind ("Pod"): seed files.
  std::optional<KindInfo> FindByKind(std::string_view api_version, std::string_view kind) const;
  // Whether `plural` names a namespaced kind of the given group (path disambiguation).
  bool IsNamespacedPlural(std::string_view group, std::string_view plural) const;
  std::vector<KindInfo> All() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, KindInfo, std::less<>> kinds_;  // storage_key -> info
};

}  // namespace phalanx::fakes::apiserver
