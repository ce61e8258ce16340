// Fast, tree-free reading of API objects with simdjson (on-demand): list pages split into the raw
// text of each item, watch lines split into type + raw object, and the few metadata fields the
// cache needs (namespace, name, resourceVersion). Lets informers decode each object exactly once,
// straight into the user's lean struct, without building a JSON tree for a whole page
// (bench/RESULTS.md, core/kube section: nlohmann parsing was ~85% of an initial sync).
// A RawObjectReader owns reusable buffers: one per thread. Not thread-safe.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "core/base/result.h"
#include "core/json/fast_json.h"

namespace phalanx::kube {

struct ObjectMeta {
  std::string ns, name, resource_version;
  // "ns/name", or "name" for cluster-scoped objects.
  std::string Key() const {
    if (ns.empty()) return name;
    std::string key;
    key.reserve(ns.size() + 1 + name.size());
    return key.append(ns).append(1, '/').append(name);
  }
};

struct RawListPage {
  std::string resource_version, continue_token;
};

class RawObjectReader {
 public:
  // metadata.{namespace,name,resourceVersion} of one object.
  Result<ObjectMeta> Meta(std::string_view object_json);
  // Calls fn(raw item text) for each element of "items"; returns the page's metadata.
  // The string_views are valid only during the call.
  Result<RawListPage> ForEachItem(std::string_view page_json,
                                  const std::function<void(std::string_view item_json)>& fn);
  // {"type": T, "object": {...}} -> type and the raw object text (copied into `object_json`).
  Status WatchLine(std::string_view line, std::string& type, std::string& object_json);

 private:
  json::FastJsonParser page_parser_, object_parser_;
};

}  // namespace phalanx::kube
