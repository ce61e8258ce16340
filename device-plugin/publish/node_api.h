// NodeApi: the API-server write the publisher needs, behind an interface so its logic is
// tested without a server (KubeNodeApi is the real one). Pods come from a watch (PodCache).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/base/clock.h"
#include "core/base/result.h"

namespace phalanx::device_plugin {

struct PodOnNode {
  std::string uid;
  std::string ns;
  std::string name;
  std::string phase;            // "Pending", "Running", ...
  SystemTime created{};
  bool deleting = false;        // has a deletionTimestamp
  std::string devices_annotation;  // phalanx.io/devices, "" if absent
  std::vector<std::string> resources;  // extended resources its containers ask for (limits, requests)
};

class NodeApi {
 public:
  virtual ~NodeApi() = default;
  // JSON merge patch of Node `node` (metadata only).
  virtual Status PatchNode(const std::string& node, const nlohmann::json& merge_patch) = 0;
};

// Decodes one Pod object. InvalidArgument when metadata.uid/name is missing.
Result<PodOnNode> DecodePod(const nlohmann::json& pod);

}  // namespace phalanx::device_plugin
