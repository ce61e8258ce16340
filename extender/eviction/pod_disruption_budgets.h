// PodDisruptionBudgets (policy/v1) as the pods/eviction subresource will apply them to a
// preemption's victims, so the extender refuses a victim set up front instead of finding out
// from a 429 after part of a gang is gone (issue 15 item 5).
//
// What kube-apiserver's eviction REST does (pkg/registry/core/pod/storage/eviction.go), and so
// what Check() predicts, per victim:
//   - a Pending, Succeeded, Failed or terminating pod is evicted without looking at budgets;
//   - no budget selects it: allowed; two or more: refused (500, unsupported);
//   - one budget: refused while its status is older than its spec (observedGeneration <
//     generation: 429 "still being processed"), or when it allows no more disruptions; an
//     unready pod uses no disruption when the budget says AlwaysAllow, or when the application
//     is already healthy enough (currentHealthy >= desiredHealthy > 0).
// Each allowed eviction uses one of the budget's disruptionsAllowed, so a victim set needs, per
// budget, as many as it has guarded (ready, running) victims.
// disruptionsAllowed is the budget's status (written by the disruption controller) when present;
// a budget with no status at all (no disruption controller, as in the fake API server) is
// computed from the pods the ledger knows, as that controller would: an integer minAvailable
// over the selected pods; percentages and maxUnavailable over the selected pods as the expected
// count. Pods the ledger does not track (no GPU, no gang label) are not counted: fewer healthy
// pods, so the estimate errs towards refusing.
// Pure. Thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/result.h"
#include "core/json/json.h"
#include "extender/objects/k8s_objects.h"
#include "extender/objects/label_selector.h"

namespace phalanx::extender {

// A budget's count: an integer or "N%".
struct IntOrPercent {
  int64_t value = 0;
  bool percent = false;
};

struct PdbInfo {
  std::string ns, name;
  // spec.selector; nullopt selects nothing (absent or malformed), empty selects every pod.
  std::optional<std::vector<LabelRequirement>> selector;
  std::optional<IntOrPercent> min_available, max_unavailable;
  bool always_allow_unhealthy = false;  // unhealthyPodEvictionPolicy: AlwaysAllow
  int64_t generation = 0;
  bool has_status = false;          // status.observedGeneration set by the disruption controller
  int64_t observed_generation = 0;
  int64_t disruptions_allowed = 0;  // status.disruptionsAllowed
  int64_t current_healthy = 0, desired_healthy = 0;

  std::string Key() const { return ns + "/" + name; }
  bool Selects(const PodInfo& pod) const;
};

// A policy/v1 PodDisruptionBudget. InvalidArgument without metadata.name.
Result<PdbInfo> ParsePdb(const json::Json& object);

// Why evicting every pod of `victims` would be refused by the API server ("" = every eviction
// would be allowed). `budgets`: every budget of the victims' namespaces; `pods_of`: the pods the
// ledger knows in a namespace (for budgets without status).
std::string CheckEvictions(const std::vector<PdbInfo>& budgets, const std::vector<const PodInfo*>& victims,
                           const std::vector<const PodInfo*>& namespace_pods);

// The budgets the extender knows (API-server mode: the PDB informer, extender/sync/kube_sync.h).
class BudgetSource {
 public:
  virtual ~BudgetSource() = default;
  virtual std::vector<PdbInfo> BudgetsIn(std::string_view ns) const = 0;
};

}  // namespace phalanx::extender
