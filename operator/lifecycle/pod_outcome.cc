#include "operator/lifecycle/pod_outcome.h"

#include <array>
#include <string_view>

#include <fmt/format.h>

namespace phalanx::op {

namespace {

// status.reason values the kubelet and node controllers set on pods they kill for reasons
// that have nothing to do with the workload.
constexpr std::array<std::string_view, 5> kDisruptionStatusReasons = {
    "Evicted", "Preempting", "NodeShutdown", "Shutdown", "Terminated"};

// Container waiting reasons that never resolve on their own: the template is broken.
constexpr std::array<std::string_view, 2> kBrokenTemplateReasons = {"InvalidImageName",
                                                                    "ErrImageNeverPull"};

std::string FailureDetail(const ObservedPod& pod, std::string& reason) {
  for (const ObservedContainer& c : pod.containers) {
    if (c.terminated && c.exit_code != 0) {
      reason = c.reason.empty() ? "Error" : c.reason;
      return fmt::format("pod {} container {} exited with code {} ({})", pod.name, c.name,
                         c.exit_code, reason);
    }
  }
  reason = pod.reason.empty() ? "Failed" : pod.reason;
  return fmt::format("pod {} failed: {}", pod.name, pod.message.empty() ? reason : pod.message);
}

}  // namespace

PodOutcome ClassifyPod(const ObservedPod& pod) {
  if (pod.disruption_reason) {
    return {PodOutcomeKind::kDisruption, *pod.disruption_reason,
            fmt::format("pod {} disrupted: {}", pod.name,
                        pod.disruption_message.empty() ? *pod.disruption_reason : pod.disruption_message)};
  }
  if (pod.phase == "Unknown" || pod.reason == "NodeLost") {
    return {PodOutcomeKind::kDisruption, "NodeLost",
            fmt::format("pod {} lost its node {}", pod.name, pod.node_name)};
  }
  if (pod.phase == "Failed") {
    for (std::string_view r : kDisruptionStatusReasons) {
      if (pod.reason == r) {
        return {PodOutcomeKind::kDisruption, pod.reason,
                fmt::format("pod {} {}: {}", pod.name, pod.reason, pod.message)};
      }
    }
  }
  if (pod.deleting()) {
    // Someone else deleted a live member (kubectl delete, a drain without the eviction
    // API): the rank is gone, the job did nothing wrong.
    return {PodOutcomeKind::kDisruption, "PodDeleted", fmt::format("pod {} was deleted", pod.name)};
  }
  if (pod.phase == "Succeeded") return {PodOutcomeKind::kSucceeded, "Completed", ""};
  if (pod.phase == "Failed") {
    PodOutcome o{PodOutcomeKind::kFailure, "", ""};
    o.message = FailureDetail(pod, o.reason);
    return o;
  }
  for (const ObservedContainer& c : pod.containers) {
    for (std::string_view r : kBrokenTemplateReasons) {
      if (!c.running && !c.terminated && c.reason == r) {
        return {PodOutcomeKind::kFailure, c.reason,
                fmt::format("pod {} container {} cannot start: {}", pod.name, c.name, c.reason)};
      }
    }
  }
  return {PodOutcomeKind::kActive, "", ""};
}

}  // namespace phalanx::op
