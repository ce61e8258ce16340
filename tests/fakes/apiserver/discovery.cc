#include "tests/fakes/apiserver/discovery.h"

#include <map>
#include <set>

#include "core/json/json.h"

namespace phalanx::fakes::apiserver {
namespace {

json::Json ResourceList(const std::string& group_version, const std::vector<KindInfo>& kinds) {
  json::Json resources = json::Json::array();
  for (const auto& k : kinds) {
    json::Json verbs = {"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"};
    if (k.plural == "tokenreviews") verbs = {"create"};
    resources.push_back({{"name", k.plural},
                         {"singularName", ""},
                         {"namespaced", k.namespaced},
                         {"kind", k.kind},
                         {"verbs", verbs}});
    if (k.has_status) {
      resources.push_back({{"name", k.plural + "/status"}, {"singularName", ""},
                           {"namespaced", k.namespaced}, {"kind", k.kind},
                           {"verbs", {"get", "patch", "update"}}});
    }
    if (k.has_scale) {
      resources.push_back({{"name", k.plural + "/scale"}, {"singularName", ""},
                           {"namespaced", k.namespaced}, {"group", "autoscaling"},
                           {"version", "v1"}, {"kind", "Scale"},
                           {"verbs", {"get", "patch", "update"}}});
    }
    if (k.group.empty() && k.plural == "pods") {
      for (const char* sub : {"pods/binding", "pods/eviction"}) {
        resources.push_back({{"name", sub}, {"singularName", ""}, {"namespaced", true},
                             {"kind", std::string(sub) == "pods/binding" ? "Binding" : "Eviction"},
                             {"verbs", {"create"}}});
      }
    }
  }
  return {{"kind", "APIResourceList"}, {"apiVersion", "v1"}, {"groupVersion", group_version},
          {"resources", resources}};
}

}  // namespace

std::optional<std::string> ServeDiscovery(std::string_view path, const KindRegistry& kinds) {
  if (!path.empty() && path.back() == '/') path.remove_suffix(1);
  if (path == "/version") {
    return json::Dump({{"major", "1"},
                       {"minor", "29"},
                       {"gitVersion", "v1.29.0-phalanx-fake"},
                       {"platform", "linux/amd64"}});
  }
  const auto all = kinds.All();
  if (path == "/api") {
    return json::Dump({{"kind", "APIVersions"}, {"versions", {"v1"}}});
  }
  if (path == "/apis") {
    std::map<std::string, std::set<std::string>> groups;
    std::map<std::string, std::string> preferred;
    for (const auto& k : all) {
      if (k.group.empty()) continue;
      groups[k.group].insert(k.version);
      for (const auto& v : k.versions) groups[k.group].insert(v);
      preferred.emplace(k.group, k.version);
    }
    json::Json list = json::Json::array();
    for (const auto& [group, versions] : groups) {
      json::Json vs = json::Json::array();
      for (const auto& v : versions) vs.push_back({{"groupVersion", group + "/" + v}, {"version", v}});
      list.push_back({{"name", group},
                      {"versions", vs},
                      {"preferredVersion",
                       {{"groupVersion", group + "/" + preferred[group]}, {"version", preferred[group]}}}});
    }
    return json::Dump({{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", list}});
  }
  std::string group, version;
  if (path == "/api/v1") {
    version = "v1";
  } else if (path.substr(0, 6) == "/apis/") {
    auto rest = path.substr(6);
    const auto slash = rest.find('/');
    if (slash == std::string_view::npos) return std::nullopt;
    group = std::string(rest.substr(0, slash));
    version = std::string(rest.substr(slash + 1));
    if (version.empty() || version.find('/') != std::string::npos) return std::nullopt;
  } else {
    return std::nullopt;
  }
  std::vector<KindInfo> served;
  for (const auto& k : all) {
    if (k.group == group && k.Serves(version)) served.push_back(k);
  }
  if (served.empty()) return std::nullopt;
  return json::Dump(ResourceList(group.empty() ? version : group + "/" + version, served));
}

}  // namespace phalanx::fakes::apiserver
