// NodeApi: the API-server write the publisher needs, behind an interface so its logic is
// tested without a server (KubeNodeApi is the real one). Pods come from a watch (PodCache).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/base/clock.h"
#include "core/base/result.h"

namespace phalanx::device_plugin {

// A container's extended-resource requests (limits, else requests), as kubelet's device
// manager reads them.
struct ContainerRequest {
  std::string name;
  bool init = false;                    // an initContainer
  std::map<std::string, int> counts;    // resource -> devices
};

struct PodOnNode {
  std::string uid;
  std::string ns;
  std::string name;
  std::string phase;            // "Pending", "Running", ...
  SystemTime created{};
  bool deleting = false;        // has a deletionTimestamp
  std::string devices_annotation;  // phalanx.io/devices, "" if absent
  std::vector<std::string> resources;  // extended resources its containers ask for (limits, requests)
  // Kubelet's allocation order: initContainers, then containers, each in spec order.
  std::vector<ContainerRequest> containers;
  uint64_t resource_version = 0;  // metadata.resourceVersion as decoded (0 = not a decimal number)
  // Set by PodCache: the order its watch first saw the pod on this node (the resourceVersion then,
  // and a local sequence), which is the order kubelet's watch delivers it (admission order).
  uint64_t arrival_rv = 0;
  uint64_t arrival_seq = 0;
  // Attribution of GPU utilisation (docs/device-plugin.md, "Utilisation"):
  std::string gang;             // label phalanx.io/gang (or scheduling.x-k8s.io/pod-group)
  std::string job;              // label phalanx.io/job-name (the operator's TrainingJob)
  std::string priority_class;   // spec.priorityClassName (the tier)
  std::string idle_since;       // annotation phalanx.io/idle-since, "" if absent
};

class NodeApi {
 public:
  virtual ~NodeApi() = default;
  // JSON merge patch of Node `node` (metadata only).
  virtual Status PatchNode(const std::string& node, const nlohmann::json& merge_patch) = 0;
  // JSON merge patch of Pod `ns`/`name` (the idle-since annotation).
  virtual Status PatchPod(const std::string& ns, const std::string& name, const nlohmann::json& merge_patch) = 0;
};

// Decodes one Pod object. InvalidArgument when metadata.uid/name is missing.
Result<PodOnNode> DecodePod(const nlohmann::json& pod);

}  // namespace phalanx::device_plugin
