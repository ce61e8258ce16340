// Kubernetes label selectors (metav1.LabelSelector) as the extender uses them: PodDisruptionBudgets
// select pods, GpuQueues select namespaces. Parsing stays with each owner (a budget's malformed
// selector selects nothing, a GpuQueue's is an error naming the field); matching is one rule.
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace phalanx::extender {

struct LabelRequirement {
  std::string key;
  std::string op;  // In, NotIn, Exists, DoesNotExist (matchLabels k: v is In [v])
  std::vector<std::string> values;
};

// Every requirement holds for `labels` (an empty selector selects everything).
inline bool SelectorMatches(const std::vector<LabelRequirement>& selector,
                            const std::map<std::string, std::string, std::less<>>& labels) {
  for (const LabelRequirement& r : selector) {
    auto it = labels.find(r.key);
    const bool has = it != labels.end();
    const bool in = has && std::find(r.values.begin(), r.values.end(), it->second) != r.values.end();
    if (r.op == "In" && !in) return false;
    if (r.op == "NotIn" && in) return false;
    if (r.op == "Exists" && !has) return false;
    if (r.op == "DoesNotExist" && has) return false;
  }
  return true;
}

}  // namespace phalanx::extender
