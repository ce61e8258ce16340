// RequestCounts: how many API requests each client made, by verb and resource, so tests can
// assert traffic budgets ("the device plugin made 0 pod LISTs after its first sync").
//   client   the request's User-Agent ("" -> "unknown")
//   verb     list, watch, get, create, update, patch, delete, deletecollection ("" when the
//            path names no resource, or the request was not authenticated)
//   resource "pods", "nodes", "leases.coordination.k8s.io", a subresource as "pods/binding",
//            "nodes/status"; "discovery" for /api, /apis, /version; "" for unknown paths
// Every request is counted once when it is served (faulted and failed requests too; a watch
// when it is opened). Unbounded by design: a few hundred keys at most. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "core/json/json.h"

namespace phalanx::fakes::apiserver {

struct RequestKey {
  std::string client, verb, resource;
  friend auto operator<=>(const RequestKey&, const RequestKey&) = default;
};

class RequestCounts {
 public:
  void Add(std::string_view client, std::string_view verb, std::string_view resource);
  std::map<RequestKey, uint64_t> Snapshot() const;
  // Requests by `client` with `verb` on `resource`; "" for any of the three matches all.
  uint64_t Count(std::string_view client, std::string_view verb, std::string_view resource) const;
  void Clear();
  // {"<client>": {"<verb>": {"<resource>": N}}}
  json::Json ToJson() const;

 private:
  mutable std::mutex mu_;
  std::map<RequestKey, uint64_t> counts_;
};

}  // namespace phalanx::fakes::apiserver
