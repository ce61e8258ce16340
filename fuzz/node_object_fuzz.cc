// A Node as the API server returns it (extender/objects/k8s_objects.h ParseNode): allocatable quantities,
// conditions, and the two annotations the device plugin writes. The input is either a whole Node
// object (JSON) or, when it does not parse as JSON, the value of phalanx.io/gpu-state, so the
// annotation decoder is reached with bytes no JSON document would carry. Contract: a broken
// annotation is recorded on the node (gpu_state_error / topology_error), never a failed parse.
#include "core/json/json.h"
#include "extender/objects/k8s_objects.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace json = phalanx::json;
  const std::string_view text = phalanx::fuzz::AsText(data, size);
  if (auto node = json::Parse(text); node.ok()) {
    (void)phalanx::extender::ParseNode(*node);
    return 0;
  }
  json::Json node = {{"metadata", {{"name", "fuzz-node"}, {"annotations", json::Json::object()}}}};
  node["metadata"]["annotations"][std::string(phalanx::extender::kGpuStateAnnotation)] = std::string(text);
  auto parsed = phalanx::extender::ParseNode(node);
  FUZZ_CHECK(parsed.ok(), parsed.status().message());
  FUZZ_CHECK(parsed->devices.empty() || parsed->gpu_state_error.empty(), parsed->gpu_state_error);
  return 0;
}
