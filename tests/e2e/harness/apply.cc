#include "tests/e2e/harness/apply.h"

#include <map>

#include <fmt/format.h>

#include "core/json/json.h"
#include "tests/fakes/apiserver/seed.h"

namespace phalanx::e2e {
namespace {

using kube::Json;

constexpr const char* kLastApplied = "kubectl.kubernetes.io/last-applied-configuration";

// The resource serving `kind` in `api_version`, from the server's discovery document (cached
// per group-version for one apply, like kubectl's discovery cache).
class Discovery {
 public:
  explicit Discovery(kube::KubeClient& client) : client_(client) {}

  Result<kube::Resource> Resolve(const std::string& api_version, const std::string& kind) {
    auto cached = lists_.find(api_version);
    if (cached == lists_.end()) {
      kube::HttpRequest request;
      request.target = api_version.find('/') == std::string::npos ? "/api/" + api_version : "/apis/" + api_version;
      auto response = client_.Do(request);
      if (!response.ok()) return response.status();
      Json list = Json::object();
      if (response->status == 200) {
        auto parsed = json::Parse(response->body);
        if (!parsed.ok()) return parsed.status().WithContext("discovery " + request.target);
        list = std::move(parsed).value();
      }
      cached = lists_.emplace(api_version, std::move(list)).first;
    }
    if (cached->second.contains("resources")) {
      for (const Json& r : cached->second["resources"]) {
        const std::string name = r.value("name", "");
        if (r.value("kind", "") != kind || name.find('/') != std::string::npos) continue;
        const auto slash = api_version.find('/');
        return kube::Resource{slash == std::string::npos ? "" : api_version.substr(0, slash),
                              slash == std::string::npos ? api_version : api_version.substr(slash + 1), name,
                              r.value("namespaced", true), kind};
      }
    }
    return NotFoundError(fmt::format("no matches for kind \"{}\" in version \"{}\" (is its CRD installed?)", kind,
                                     api_version));
  }

 private:
  kube::KubeClient& client_;
  std::map<std::string, Json> lists_;
};

}  // namespace

Result<std::vector<Json>> ApplyManifest(kube::KubeClient& client, std::string_view yaml,
                                        const std::string& default_namespace) {
  auto documents = fakes::apiserver::ParseSeedDocument(yaml);
  if (!documents.ok()) return documents.status();
  Discovery discovery(client);
  std::vector<Json> applied;
  for (size_t i = 0; i < documents->size(); ++i) {
    Json object = (*documents)[i];
    const std::string api_version = object.value("apiVersion", "");
    const std::string kind = object.value("kind", "");
    const std::string name = object.contains("metadata") ? object["metadata"].value("name", "") : "";
    const std::string what = fmt::format("document {} ({} {})", i, kind, name);
    if (api_version.empty() || kind.empty() || name.empty()) {
      return InvalidArgumentError(what + ": apiVersion, kind and metadata.name are required");
    }
    auto resource = discovery.Resolve(api_version, kind);
    if (!resource.ok()) return resource.status().WithContext(what);
    std::string ns;
    if (resource->namespaced) {
      ns = object["metadata"].value("namespace", default_namespace);
      object["metadata"]["namespace"] = ns;
    } else {
      object["metadata"].erase("namespace");
    }
    object["metadata"]["annotations"][kLastApplied] = json::Dump(object);
    auto existing = client.Get(*resource, ns, name);
    Result<Json> written = Json();
    if (existing.ok()) {
      written = client.Patch(*resource, ns, name, kube::PatchType::kMerge, object);
    } else if (IsNotFound(existing.status())) {
      written = client.Create(*resource, ns, object);
    } else {
      return existing.status().WithContext(what);
    }
    if (!written.ok()) return written.status().WithContext(what);
    applied.push_back(std::move(written).value());
  }
  return applied;
}

}  // namespace phalanx::e2e
