// RouteTable lookup (see route_table.h).
#include "core/http/route_table.h"

#include <algorithm>
#include <set>
#include <utility>

namespace phalanx::http {
namespace {

const Handler* FindMethod(const std::map<std::string, Handler, std::less<>>& methods,
                          std::string_view method) {
  auto it = methods.find(method);
  if (it == methods.end()) it = methods.find(std::string_view("*"));
  return it == methods.end() ? nullptr : &it->second;
}

}  // namespace

void RouteTable::Add(std::string method, std::string path, Handler handler) {
  exact_[std::move(path)][std::move(method)] = std::move(handler);
}

void RouteTable::AddPrefix(std::string method, std::string prefix, Handler handler) {
  auto it = std::find_if(prefixes_.begin(), prefixes_.end(),
                         [&](const PrefixRoute& r) { return r.prefix == prefix; });
  if (it == prefixes_.end()) {
    // Keep longest-first order so Find() can stop at the first match.
    auto pos = std::find_if(prefixes_.begin(), prefixes_.end(), [&](const PrefixRoute& r) {
      return r.prefix.size() < prefix.size();
    });
    it = prefixes_.insert(pos, PrefixRoute{std::move(prefix), {}});
  }
  it->methods[std::move(method)] = std::move(handler);
}

RouteTable::Match RouteTable::Find(std::string_view method, std::string_view path) const {
  Match match;
  std::set<std::string> allowed;  // only filled on the (rare) 405 path below
  bool path_known = false;

  auto exact = exact_.find(path);
  if (exact != exact_.end()) {
    if (const Handler* h = FindMethod(exact->second, method)) {
      match.handler = h;
      return match;
    }
    path_known = true;
  }
  for (const PrefixRoute& route : prefixes_) {
    if (path.substr(0, route.prefix.size()) != route.prefix) continue;
    if (const Handler* h = FindMethod(route.methods, method)) {
      match.handler = h;
      return match;
    }
    path_known = true;
  }
  if (!path_known) return match;

  // 405: list every method some matching route accepts.
  match.status = 405;
  if (exact != exact_.end()) {
    for (const auto& [m, h] : exact->second) allowed.insert(m);
  }
  for (const PrefixRoute& route : prefixes_) {
    if (path.substr(0, route.prefix.size()) != route.prefix) continue;
    for (const auto& [m, h] : route.methods) allowed.insert(m);
  }
  for (const std::string& m : allowed) {
    if (!match.allow.empty()) match.allow += ", ";
    match.allow += m;
  }
  return match;
}

}  // namespace phalanx::http
