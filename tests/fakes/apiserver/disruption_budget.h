// PodDisruptionBudgets (policy/v1) as the pods/eviction subresource applies them
// (kube-apiserver's pkg/registry/core/pod/storage/eviction.go). The fake runs no disruption
// controller, so a budget's numbers are computed from the pods it selects at the moment of the
// eviction, the way pkg/controller/disruption would publish them:
//   currentHealthy  = selected pods that are Ready and not terminating
//   desiredHealthy  = minAvailable (an integer), or ceil(minAvailable% x expected), or
//                     expected - ceil(maxUnavailable[%] x expected), at least 0
//   expected        = the selected pods (integer minAvailable), else the scale of their
//                     controllers (the caller sums spec.replicas of the controllers' owner
//                     objects; a pod without one leaves no scale, and the budget allows nothing)
//   disruptionsAllowed = currentHealthy - desiredHealthy, 0 when negative or expected is 0
// Pure. Thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/json/json.h"
#include "tests/fakes/apiserver/api_error.h"
#include "tests/fakes/apiserver/selectors.h"
#include "tests/fakes/apiserver/stored_object.h"

namespace phalanx::fakes::apiserver {

struct BudgetStatus {
  int64_t expected_pods = 0;
  int64_t current_healthy = 0;
  int64_t desired_healthy = 0;
  int64_t disruptions_allowed = 0;
};

// `budget`'s spec.selector, compiled once for matching many pods (the caller checks the
// namespace). As in policy/v1: nullopt (selects nothing) when absent or malformed; `{}` selects
// every pod.
std::optional<LabelSelector> BudgetSelector(const json::Json& budget);

// status.conditions has Ready=True.
bool PodReady(const json::Json& pod);

// Terminal (Succeeded/Failed), Pending or terminating pods are evicted without a budget check:
// they are not running, so evicting them disrupts nothing (canIgnorePDB).
bool EvictionIgnoresBudgets(const StoredObject& pod);

// The numbers above, from the parsed pods `budget` selects and their controllers' scale
// (nullopt: some pod has no controller with spec.replicas).
BudgetStatus ComputeBudgetStatus(const json::Json& budget, const std::vector<json::Json>& selected,
                                 std::optional<int64_t> controllers_scale);

// The eviction of a pod guarded by exactly this budget: nullopt when allowed, else the 429 the
// real server answers. An unready pod may go without using the budget when the budget says
// AlwaysAllow or the application is already healthy enough (currentHealthy >= desiredHealthy > 0).
std::optional<ApiError> CheckEviction(const json::Json& budget, const BudgetStatus& status,
                                      bool pod_ready);

// 500 for a pod selected by more than one budget (a Status with no reason, as the real server).
ApiError MultipleBudgetsError();

}  // namespace phalanx::fakes::apiserver
