#include "extender/mig/mig_requests.h"

#include <algorithm>

#include <fmt/format.h>

#include "extender/objects/k8s_objects.h"

namespace phalanx::extender {
namespace {

using json::Json;

using json::Member;

// One container's MIG requests (requests win over limits; a limit alone implies the request).
Status ContainerMig(const Json& container, const std::string& path, MigRequests& out) {
  const Json* resources = Member(container, "resources");
  if (!resources) return OkStatus();
  for (const char* section : {"limits", "requests"}) {  // requests last: they override
    const Json* s = Member(*resources, section);
    if (!s || !s->is_object()) continue;
    for (auto it = s->begin(); it != s->end(); ++it) {
      auto profile = placement::MigProfileOf(it.key());
      if (!profile) continue;
      if (!it->is_string()) {
        return InvalidArgumentError(fmt::format("{}.resources.{}[{}]: expected a quantity string", path, section, it.key()));
      }
      auto count = ParseCountQuantity(it->get<std::string>());
      if (!count.ok() || *count < 0 || *count > 64) {
        return InvalidArgumentError(fmt::format("{}.resources.{}[{}]: {}", path, section, it.key(),
                                                count.ok() ? "out of range" : std::string(count.status().message())));
      }
      out[*profile] = static_cast<int>(*count);
    }
  }
  return OkStatus();
}

}  // namespace

Result<ParsedMigRequests> ParseMigRequests(const json::Json& spec) {
  ParsedMigRequests out;
  if (const Json* containers = Member(spec, "containers"); containers && containers->is_array()) {
    for (size_t i = 0; i < containers->size(); ++i) {
      MigRequests one;
      PHX_RETURN_IF_ERROR(ContainerMig((*containers)[i], fmt::format("Pod.spec.containers[{}]", i), one));
      bool any = false;
      for (const auto& [profile, n] : one) {
        out.requests[profile] += n;
        any = any || n > 0;
      }
      if (any && out.container.empty()) {
        const Json* name = Member((*containers)[i], "name");
        out.container = name && name->is_string() ? name->get<std::string>() : "main";
      }
    }
  }
  if (const Json* inits = Member(spec, "initContainers"); inits && inits->is_array()) {
    for (size_t i = 0; i < inits->size(); ++i) {
      MigRequests one;
      PHX_RETURN_IF_ERROR(ContainerMig((*inits)[i], fmt::format("Pod.spec.initContainers[{}]", i), one));
      for (const auto& [profile, n] : one) out.requests[profile] = std::max(out.requests[profile], n);
    }
  }
  std::erase_if(out.requests, [](const auto& kv) { return kv.second <= 0; });
  return out;
}

Result<std::optional<placement::MigRequest>> SingleMigRequest(const MigRequests& requests) {
  if (requests.empty()) return std::optional<placement::MigRequest>();
  if (requests.size() > 1) {
    std::string names;
    for (const auto& [profile, n] : requests) names += (names.empty() ? "" : ", ") + placement::MigResourceName(profile);
    return InvalidArgumentError(fmt::format("pod requests several MIG profiles ({}); phalanx schedules one per pod", names));
  }
  return std::optional<placement::MigRequest>(placement::MigRequest{requests.begin()->first, requests.begin()->second});
}

}  // namespace phalanx::extender
