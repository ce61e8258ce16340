// CustomResourceDefinitions in the fake's Store: what a CRD update may change, and the kind
// re-registered so its new schema applies at once (as the real apiextensions server does).
#include <set>
#include <string>
#include <tuple>

#include <fmt/format.h>

#include "tests/fakes/apiserver/store.h"
#include "tests/fakes/apiserver/store_internal.h"

namespace phalanx::fakes::apiserver {

namespace internal {

std::string StorageVersionOf(const json::Json& crd) {
  std::string version;
  for (const auto& v : crd["spec"]["versions"]) {
    if (version.empty() || v.value("storage", false)) version = v["name"].get<std::string>();
  }
  return version;
}

}  // namespace internal

std::optional<ApiError> Store::UpdateCrdLocked(const KindInfo& kind, const json::Json& old_crd,
                                               const json::Json& new_crd) {
  const std::string name = internal::MetaString(new_crd, "name");
  const auto at = [](const json::Json& crd, const char* a, const char* b = nullptr) {
    const json::Json* v = &crd;
    for (const char* key : {"spec", a, b}) {
      if (key == nullptr) break;
      if (!v->is_object() || !v->contains(key)) return json::Json();
      v = &(*v)[key];
    }
    return *v;
  };
  for (const auto& [field, a, b] : {std::tuple{"spec.group", "group", (const char*)nullptr},
                                    std::tuple{"spec.scope", "scope", (const char*)nullptr},
                                    std::tuple{"spec.names.plural", "names", "plural"}}) {
    if (at(old_crd, a, b) != at(new_crd, a, b)) {
      return Invalid(kind.group, kind.kind, name,
                     fmt::format("{}: Invalid value: {}: field is immutable", field,
                                 json::Dump(at(new_crd, a, b))));
    }
  }
  std::set<std::string> served;
  for (const auto& v : at(new_crd, "versions")) {
    if (v.is_object() && v.contains("name") && v["name"].is_string()) served.insert(v["name"].get<std::string>());
  }
  if (old_crd.contains("status") && old_crd["status"].contains("storedVersions")) {
    int i = 0;
    for (const auto& stored : old_crd["status"]["storedVersions"]) {
      if (stored.is_string() && served.count(stored.get<std::string>()) == 0) {
        return Invalid(kind.group, kind.kind, name,
                       fmt::format("status.storedVersions[{}]: Invalid value: {}: must appear in "
                                   "spec.versions", i, json::Dump(stored)));
      }
      ++i;
    }
  }
  const Status registered = kinds_.RegisterCrd(new_crd);
  if (!registered.ok()) return Invalid(kind.group, kind.kind, name, registered.message());
  return std::nullopt;
}

}  // namespace phalanx::fakes::apiserver
