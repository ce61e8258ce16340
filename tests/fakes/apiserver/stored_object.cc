#include "tests/fakes/apiserver/stored_object.h"

#include <algorithm>
#include <cstdlib>

namespace phalanx::fakes::apiserver {
namespace {

std::string StringAt(const json::Json& object, std::string_view a, std::string_view b) {
  auto it = object.find(a);
  if (it == object.end() || !it->is_object()) return "";
  auto jt = it->find(b);
  if (jt == it->end() || !jt->is_string()) return "";
  return jt->get<std::string>();
}

}  // namespace

const std::string* StoredObject::Label(std::string_view key) const {
  auto it = std::lower_bound(labels.begin(), labels.end(), key,
                             [](const auto& l, std::string_view k) { return l.first < k; });
  if (it == labels.end() || it->first != key) return nullptr;
  return &it->second;
}

std::string StoredObject::Field(std::string_view path) const {
  if (path == "metadata.name") return name;
  if (path == "metadata.namespace") return namespace_;
  if (path == "spec.nodeName") return node_name;
  if (path == "status.phase") return phase;
  if (path == "spec.schedulerName") return scheduler_name;
  // Any other dotted path: parse (rare, slow path).
  const json::Json object = Parse();
  const json::Json* at = &object;
  size_t start = 0;
  while (start <= path.size()) {
    const size_t dot = path.find('.', start);
    const std::string part(path.substr(start, dot == std::string_view::npos ? std::string_view::npos
                                                                           : dot - start));
    if (!at->is_object()) return "";
    auto it = at->find(part);
    if (it == at->end()) return "";
    at = &*it;
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  if (at->is_string()) return at->get<std::string>();
  if (at->is_null()) return "";
  return json::Dump(*at);
}

json::Json StoredObject::Parse() const { return json::Json::parse(json); }

ObjectPtr MakeStored(const json::Json& object) {
  auto stored = std::make_shared<StoredObject>();
  stored->json = json::Dump(object);
  const json::Json& meta = object.at("metadata");
  stored->namespace_ = meta.value("namespace", std::string());
  stored->name = meta.value("name", std::string());
  stored->uid = meta.value("uid", std::string());
  stored->resource_version =
      std::strtoull(meta.value("resourceVersion", std::string("0")).c_str(), nullptr, 10);
  stored->terminating = meta.contains("deletionTimestamp") && !meta["deletionTimestamp"].is_null();
  if (auto it = meta.find("labels"); it != meta.end() && it->is_object()) {
    for (const auto& [k, v] : it->items()) {
      if (v.is_string()) stored->labels.emplace_back(k, v.get<std::string>());
    }
    std::sort(stored->labels.begin(), stored->labels.end());
  }
  if (auto it = meta.find("ownerReferences"); it != meta.end() && it->is_array()) {
    for (const auto& ref : *it) {
      if (ref.is_object() && ref.contains("uid") && ref["uid"].is_string()) {
        stored->owner_uids.push_back(ref["uid"].get<std::string>());
      }
    }
  }
  stored->node_name = StringAt(object, "spec", "nodeName");
  stored->phase = StringAt(object, "status", "phase");
  stored->scheduler_name = StringAt(object, "spec", "schedulerName");
  return stored;
}

}  // namespace phalanx::fakes::apiserver
