// The scheduler-extender wire format (k8s.io/kube-scheduler/extender/v1), exactly as a
// real kube-scheduler speaks it: the types have no JSON tags, so keys are Go field
// names (`Pod`, `Nodes`, `NodeNames`, `FailedNodes`, `FailedAndUnresolvableNodes`,
// `Error`, `Host`, `Score`, `NodeNameToVictims`, `NodeNameToMetaVictims`, `Pods`,
// `NumPDBViolations`, `UID`, `PodName`, `PodNamespace`, `PodUID`, `Node`); unused fields
// arrive as null. Captured requests: tests/data/fixtures/kube-scheduler-v1.26.
//
// Filter/prioritize requests are read with simdjson on-demand (the 5,000-name hot path,
// DESIGN §6); only the Pod object is handed to the general parser. Replies are written
// by hand into one string. Parsed views point into the parser's buffers: use them
// before the parser's next call. Pure; a FastJsonParser per thread.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/result.h"
#include "core/json/fast_json.h"
#include "extender/k8s_objects.h"

namespace phalanx::extender {

// ExtenderArgs (filter and prioritize).
struct FilterArgs {
  PodInfo pod;
  std::vector<std::string_view> node_names;  // NodeNames, or Nodes.items[].metadata.name
  bool full_nodes = false;                   // Nodes was given (nodeCacheCapable: false)
  std::vector<std::string_view> raw_nodes;   // full mode: each item's JSON, same order
};

struct FilterResult {
  std::vector<std::string_view> passed;  // subset of the input, input order
  std::vector<std::pair<std::string_view, std::string>> failed;        // preemption may help
  std::vector<std::pair<std::string_view, std::string>> unresolvable;  // it cannot
  std::string error;
  bool full_nodes = false;
  std::vector<std::string_view> passed_raw;  // full mode: raw node JSON of `passed`
};

struct HostScore {
  std::string_view host;
  int score = 0;  // 0..10 (MaxExtenderPriority)
};

// ExtenderPreemptionArgs: candidate node -> victim pod UIDs (from either map).
struct PreemptArgs {
  PodInfo pod;
  bool meta = true;  // NodeNameToMetaVictims (nodeCacheCapable) vs NodeNameToVictims
  std::map<std::string, std::vector<std::string>> victims;
  std::map<std::string, int> pdb_violations;
  // Full mode: the victim UIDs the scheduler sent (a reply names only those).
  std::set<std::string> raw_pods;
};

struct PreemptResult {
  bool meta = true;
  std::map<std::string, std::vector<std::string>> victims;  // node -> UIDs
  std::map<std::string, int> pdb_violations;
};

struct BindArgs {
  std::string pod_name, pod_namespace, pod_uid, node;
};

Result<FilterArgs> ParseFilterArgs(std::string_view body, json::FastJsonParser& parser);
Result<PreemptArgs> ParsePreemptArgs(std::string_view body);
Result<BindArgs> ParseBindArgs(std::string_view body);

std::string EncodeFilterResult(const FilterResult& result);
std::string EncodeHostPriorities(const std::vector<HostScore>& scores);
// Always NodeNameToMetaVictims (UIDs), the only map kube-scheduler reads back.
std::string EncodePreemptResult(const PreemptResult& result, const PreemptArgs& args);
std::string EncodeBindResult(std::string_view error);

// Appends `s` as a JSON string literal (quotes and escapes included).
void AppendJsonString(std::string& out, std::string_view s);

}  // namespace phalanx::extender
