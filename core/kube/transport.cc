#include "core/kube/transport.h"

#include <strings.h>

namespace phalanx::kube {

std::string_view FindHeader(const HeaderList& headers, std::string_view name) {
  for (const auto& [k, v] : headers) {
    if (k.size() == name.size() && strncasecmp(k.data(), name.data(), name.size()) == 0) return v;
  }
  return {};
}

std::string_view HttpResponse::Header(std::string_view name) const { return FindHeader(headers, name); }

}  // namespace phalanx::kube
