// Parses a Kubernetes API path into the resource it addresses:
//   /api/v1/<plural>[/<name>[/<sub>]]                           cluster-scoped, or all namespaces
//   /api/v1/namespaces/<ns>/<plural>[/<name>[/<sub>]]           namespaced
//   /apis/<group>/<version>/... the same shapes
// "/api/v1/namespaces/x" is the Namespace x; "/api/v1/namespaces/x/status" its status.
// Pure. Thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "tests/fakes/apiserver/kind_registry.h"

namespace phalanx::fakes::apiserver {

struct ResourcePath {
  KindInfo kind;
  std::string namespace_;    // "" = cluster-scoped or all namespaces
  std::string name;          // "" = the collection
  std::string subresource;   // "status", "binding", "eviction", "scale", ...
};

// nullopt when the path does not name a known resource (HTTP 404).
std::optional<ResourcePath> ParseResourcePath(std::string_view path, const KindRegistry& kinds);

}  // namespace phalanx::fakes::apiserver
