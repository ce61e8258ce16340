#include "tests/fakes/apiserver/request_path.h"

#include <vector>

#include "core/http/request_target.h"

namespace phalanx::fakes::apiserver {

std::optional<ResourcePath> ParseResourcePath(std::string_view path, const KindRegistry& kinds) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start < path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string_view::npos) slash = path.size();
    if (slash > start) {
      parts.push_back(http::PercentDecode(path.substr(start, slash - start), false));
    }
    start = slash + 1;
  }
  std::string group, version;
  size_t i = 0;
  if (parts.size() >= 2 && parts[0] == "api") {
    version = parts[1];
    i = 2;
  } else if (parts.size() >= 3 && parts[0] == "apis") {
    group = parts[1];
    version = parts[2];
    i = 3;
  } else {
    return std::nullopt;
  }
  const size_t n = parts.size() - i;  // segments after the group/version
  if (n == 0) return std::nullopt;
  ResourcePath out;
  // namespaces/<ns>/<plural>...: a namespaced resource (the third segment must be one).
  if (parts[i] == "namespaces" && n >= 3 && kinds.IsNamespacedPlural(group, parts[i + 2])) {
    out.namespace_ = parts[i + 1];
    i += 2;
  }
  const size_t rest = parts.size() - i;
  if (rest > 3) return std::nullopt;
  auto kind = kinds.Find(group, version, parts[i]);
  if (!kind) return std::nullopt;
  out.kind = *kind;
  if (rest >= 2) out.name = parts[i + 1];
  if (rest == 3) out.subresource = parts[i + 2];
  if (!out.kind.namespaced && !out.namespace_.empty()) return std::nullopt;
  // A namespaced kind addressed by name must come with a namespace.
  if (out.kind.namespaced && out.namespace_.empty() && !out.name.empty()) return std::nullopt;
  return out;
}

}  // namespace phalanx::fakes::apiserver
