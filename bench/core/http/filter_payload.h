// The kube-scheduler extender "filter" exchange used by the HTTP benchmark: a request carrying a
// realistic ~3 KB pod and N candidate node names (nodeCacheCapable: "Nodes" is null), and the
// reply that accepts every node. Two server-side implementations: nlohmann (DOM) and simdjson
// on-demand (core/json/fast_json.h). Thread-compatible: a FastJsonParser per thread.
#pragma once

#include <string>
#include <string_view>

#include "core/base/result.h"
#include "core/json/fast_json.h"

namespace phalanx::bench {

// {"Pod":{...},"Nodes":null,"NodeNames":["gpu-node-0000",...]}
std::string MakeFilterRequest(int node_count);

// The ~3 KB pod alone (metadata with labels, annotations and ownerReferences, two containers with
// GPU limits, env, mounts, tolerations, affinity, status).
std::string MakePodJson();

// Parse the request, read the pod's identity and GPU request, and reply
// {"NodeNames":[...all...],"FailedNodes":{},"FailedAndUnresolvableNodes":{},"Error":""}.
Result<std::string> FilterReplyNlohmann(std::string_view request);
Result<std::string> FilterReplySimdjson(json::FastJsonParser& parser, std::string_view request);

}  // namespace phalanx::bench
