// API discovery documents built from the KindRegistry, so kubectl and discovery-based clients
// can find resources: /api (APIVersions), /apis (APIGroupList), /api/v1 and /apis/<g>/<v>
// (APIResourceList), and /version. Pure. Thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "tests/fakes/apiserver/kind_registry.h"

namespace phalanx::fakes::apiserver {

// The JSON body for a discovery path, or nullopt when `path` is not one.
std::optional<std::string> ServeDiscovery(std::string_view path, const KindRegistry& kinds);

}  // namespace phalanx::fakes::apiserver
