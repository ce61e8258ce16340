// The scheduling policy and queue YAML (core/scheduling/policy_yaml.h, queues.h), as the
// extender's config and the simulator's --policy-file hand them over: a YAML document. yaml-cpp's
// own syntax errors are the caller's to catch (every caller does); the decoders must not throw.
#include <yaml-cpp/yaml.h>

#include "core/scheduling/policy_yaml.h"
#include "core/scheduling/queues.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  YAML::Node node;
  try {
    node = YAML::Load(std::string(phalanx::fuzz::AsText(data, size)));
  } catch (const YAML::Exception&) {
    return 0;
  }
  (void)phalanx::scheduling::ParseEnginePolicy(node);
  // ParseQueueConfigFrom's callers hand it a mapping (its documented precondition).
  if (node.IsMap()) (void)phalanx::scheduling::ParseQueueConfigFrom(node);
  if (node.IsMap() && node["queues"]) (void)phalanx::scheduling::ParseQueueList(node["queues"]);
  return 0;
}
