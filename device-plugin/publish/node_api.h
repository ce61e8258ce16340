// NodeApi: the two API-server operations the device plugin needs, behind an interface so
// the publisher's logic is tested without a server (KubeNodeApi is the real one).
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
};

class NodeApi {
 public:
  virtual ~NodeApi() = default;
  // JSON merge patch of Node `node` (metadata only).
  virtual Status PatchNode(const std::string& node, const nlohmann::json& merge_patch) = 0;
  // Pods bound to `node` (spec.nodeName), any phase. `fast`: a single short attempt (the
  // kubelet admission path), else the client's usual retries.
  virtual Result<std::vector<PodOnNode>> ListPodsOnNode(const std::string& node, bool fast) = 0;
};

// Decodes one Pod object. InvalidArgument when metadata.uid/name is missing.
Result<PodOnNode> DecodePod(const nlohmann::json& pod);

}  // namespace phalanx::device_plugin
