#include "operator/lifecycle/pod_outcome.h"

#include <gtest/gtest.h>

namespace phalanx::op {
namespace {

ObservedPod Pod(std::string phase) {
  ObservedPod p;
  p.name = "llama-a1-0";
  p.attempt = 1;
  p.index = 0;
  p.phase = std::move(phase);
  p.node_name = "gpu-1";
  return p;
}

TEST(PodOutcomeTest, ClassifiesOutcomes) {
  struct Case {
    std::string name;
    ObservedPod pod;
    PodOutcomeKind kind;
    std::string reason;
  };
  std::vector<Case> cases;
  cases.push_back({"running", Pod("Running"), PodOutcomeKind::kActive, ""});
  cases.push_back({"succeeded", Pod("Succeeded"), PodOutcomeKind::kSucceeded, "Completed"});
  {
    ObservedPod p = Pod("Failed");
    p.containers.push_back({"trainer", false, true, 137, "OOMKilled", "", std::nullopt});
    cases.push_back({"oom is a failure", p, PodOutcomeKind::kFailure, "OOMKilled"});
  }
  {
    ObservedPod p = Pod("Failed");
    p.containers.push_back({"trainer", false, true, 143, "Error", "", std::nullopt});
    p.disruption_reason = "PreemptionByScheduler";
    cases.push_back({"disruption target wins over exit code", p, PodOutcomeKind::kDisruption, "PreemptionByScheduler"});
  }
  {
    ObservedPod p = Pod("Running");
    p.disruption_reason = "EvictionByEvictionAPI";
    cases.push_back({"eviction api", p, PodOutcomeKind::kDisruption, "EvictionByEvictionAPI"});
  }
  cases.push_back({"unknown phase is node lost", Pod("Unknown"), PodOutcomeKind::kDisruption, "NodeLost"});
  {
    ObservedPod p = Pod("Failed");
    p.reason = "Evicted";
    cases.push_back({"kubelet eviction", p, PodOutcomeKind::kDisruption, "Evicted"});
  }
  {
    ObservedPod p = Pod("Running");
    p.deletion_timestamp = SystemTime{};
    cases.push_back({"deleted by someone", p, PodOutcomeKind::kDisruption, "PodDeleted"});
  }
  {
    ObservedPod p = Pod("Pending");
    p.containers.push_back({"trainer", false, false, 0, "InvalidImageName", "", std::nullopt});
    cases.push_back({"broken image", p, PodOutcomeKind::kFailure, "InvalidImageName"});
  }
  {
    ObservedPod p = Pod("Pending");
    p.containers.push_back({"trainer", false, false, 0, "ImagePullBackOff", "", std::nullopt});
    cases.push_back({"transient pull error waits", p, PodOutcomeKind::kActive, ""});
  }
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    PodOutcome o = ClassifyPod(tc.pod);
    EXPECT_EQ(o.kind, tc.kind);
    EXPECT_EQ(o.reason, tc.reason);
  }
}

}  // namespace
}  // namespace phalanx::op
