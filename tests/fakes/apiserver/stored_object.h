// StoredObject: one immutable version of an object, kept as its serialised JSON (what lists and
// watches send, so they never re-serialise) plus the few fields selectors and storage need.
// Objects are shared between the store and the watch history through shared_ptr<const ...>:
// a new version is a new StoredObject. Lean on purpose: 100,000 pods as parsed nlohmann trees
// would cost ~1 GB, as strings plus an index they cost ~250 MB.
// Thread-safe (immutable).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/json/json.h"

namespace phalanx::fakes::apiserver {

struct StoredObject {
  std::string json;  // compact serialisation, the object as clients see it
  std::string namespace_, name, uid;
  uint64_t resource_version = 0;
  std::vector<std::pair<std::string, std::string>> labels;  // sorted by key
  std::vector<std::string> owner_uids;                       // metadata.ownerReferences[].uid
  // Indexed field selector values ("" when absent).
  std::string node_name, phase, scheduler_name;
  bool terminating = false;  // metadata.deletionTimestamp set

  // "<namespace>/<name>" (cluster-scoped: "/<name>"): the storage order inside one resource.
  std::string key() const { return namespace_ + "/" + name; }
  const std::string* Label(std::string_view key) const;
  // Any field selector path, indexed ones without parsing.
  std::string Field(std::string_view path) const;
  json::Json Parse() const;  // a mutable copy
};

using ObjectPtr = std::shared_ptr<const StoredObject>;

// Builds a StoredObject from a complete object (metadata already filled in).
ObjectPtr MakeStored(const json::Json& object);

}  // namespace phalanx::fakes::apiserver
