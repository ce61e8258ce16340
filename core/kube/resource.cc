#include "core/kube/resource.h"

namespace phalanx::kube {

std::string UrlEscape(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '.' || c == '_' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

std::string ResourcePath(const Resource& resource, std::string_view ns, std::string_view name,
                         std::string_view subresource) {
  std::string path = resource.group.empty() ? "/api/" + resource.version
                                            : "/apis/" + resource.group + "/" + resource.version;
  if (resource.namespaced && !ns.empty()) path += "/namespaces/" + UrlEscape(ns);
  path += "/" + resource.resource;
  if (!name.empty()) {
    path += "/" + UrlEscape(name);
    if (!subresource.empty()) path += "/" + std::string(subresource);
  }
  return path;
}

std::string QueryString(const std::vector<std::pair<std::string, std::string>>& params) {
  std::string out;
  for (const auto& [k, v] : params) {
    out += out.empty() ? '?' : '&';
    out += UrlEscape(k);
    out += '=';
    out += UrlEscape(v);
  }
  return out;
}

}  // namespace phalanx::kube
