// The scheduler-extender wire format (k8s.io/kube-scheduler/extender/v1), exactly as a
// real kube-scheduler speaks it: the types have no JSON tags, so keys are Go field
// names (`Pod`, `Nodes`, `NodeNames`, `FailedNodes`, `FailedAndUnresolvableNodes`,
// `Error`, `Host`, `Score`, `NodeNameToVictims`, `NodeNameToMetaVictims`, `Pods`,
// `NumPDBViolations`, `UID`, `PodName`, `PodNamespace`, `PodUID`, `Node`); unused fields
// arrive as null. Captured requests: tests/data/fixtures/kube-scheduler-v1.26.
//
// Filter/prioritize requests are read with simdjson on-demand (the 5,000-name hot path,
// docs/architecture.md §6); only the Pod object is handed to the general parser. Replies are written
// by hand into one string. Parsed views point into the parser's buffers: use them
// before the parser's next call. Pure; a FastJsonParser per thread.
#pragma once

#include <map>
#include <memory>
#include <ostream>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/result.h"
#include "core/json/fast_json.h"
#include "extender/objects/k8s_objects.h"

namespace phalanx::extender {

// ExtenderArgs (filter and prioritize).
struct FilterArgs {
  PodInfo pod;
  std::vector<std::string_view> node_names;  // NodeNames, or Nodes.items[].metadata.name
  bool full_nodes = false;                   // Nodes was given (nodeCacheCapable: false)
  std::vector<std::string_view> raw_nodes;   // full mode: each item's JSON, same order
  // Set by a caller that only encodes the result (the HTTP verb): an answer the filter kept
  // may then stand in for the entries (FilterResult::encoded, extender/verbs/no_fit_cache.h).
  bool reply_only = false;
};

// Why a node failed the filter. Copies share one string: a full cluster fails thousands
// of names for a handful of reasons, each formatted once (extender/verbs/filter.cc), so an entry
// costs a reference count rather than an allocation, and the reply escapes each text once.
class FailReason {
 public:
  FailReason() : text_(Empty()) {}
  FailReason(std::string text) : text_(std::make_shared<const std::string>(std::move(text))) {}  // NOLINT: implicit
  FailReason(const char* text) : FailReason(std::string(text)) {}                                 // NOLINT: implicit
  // A text that outlives every reply (a static string): copies share it without touching a
  // reference count, so refusing 5,000 nodes for one fixed reason copies a pointer per node
  // (the counted copies were ~10 % of a no-fit filter's server time: bench/RESULTS.md).
  static FailReason Static(const std::string& text) {
    FailReason r;
    r.text_ = std::shared_ptr<const std::string>(std::shared_ptr<const std::string>(), &text);  // no owner
    return r;
  }
  const std::string& str() const { return *text_; }
  operator const std::string&() const { return *text_; }  // NOLINT: reads as the string it is
  operator std::string_view() const { return *text_; }    // NOLINT
  // The shared text's identity: equal for copies of one reason.
  const void* id() const { return text_.get(); }
  friend bool operator==(const FailReason& a, std::string_view b) { return a.str() == b; }
  friend std::ostream& operator<<(std::ostream& os, const FailReason& r) { return os << r.str(); }

 private:
  static const std::shared_ptr<const std::string>& Empty() {
    static const auto* empty = new std::shared_ptr<const std::string>(std::make_shared<const std::string>());
    return *empty;
  }
  std::shared_ptr<const std::string> text_;
};

struct FilterResult {
  std::vector<std::string_view> passed;  // subset of the input, input order
  std::vector<std::pair<std::string_view, FailReason>> failed;        // preemption may help
  std::vector<std::pair<std::string_view, FailReason>> unresolvable;  // it cannot
  std::string error;
  bool full_nodes = false;
  std::vector<std::string_view> passed_raw;  // full mode: raw node JSON of `passed`
  // The reply already encoded, when the filter has it (FilterArgs::reply_only, nothing fits):
  // EncodeFilterResult returns it; the entries above may then be empty.
  std::shared_ptr<const std::string> encoded;
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
