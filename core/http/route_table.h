// RouteTable: maps (method, path) to a Handler. Exact routes are tried first, then prefix routes,
// longest prefix first; method "*" matches any method. When the path matches a route but not for
// this method, the lookup reports 405 with the methods that would have matched (Allow header).
//
// Immutable once shared: the server copies the table on each registration and swaps a
// shared_ptr<const RouteTable>, so lookups take no lock beyond copying that pointer.
// Thread-compatible.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/http/http_server.h"

namespace phalanx::http {

class RouteTable {
 public:
  struct Match {
    const Handler* handler = nullptr;  // null: no route for this method
    int status = 404;                  // 404 (no route for the path) or 405 when handler is null
    std::string allow;                 // 405: "GET, POST"
  };

  void Add(std::string method, std::string path, Handler handler);
  void AddPrefix(std::string method, std::string prefix, Handler handler);

  // The returned handler points into this table: keep the table alive while using it.
  Match Find(std::string_view method, std::string_view path) const;

 private:
  using MethodMap = std::map<std::string, Handler, std::less<>>;  // method -> handler
  struct PrefixRoute {
    std::string prefix;
    MethodMap methods;
  };

  std::map<std::string, MethodMap, std::less<>> exact_;
  std::vector<PrefixRoute> prefixes_;  // longest prefix first
};

}  // namespace phalanx::http
