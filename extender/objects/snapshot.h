// Cluster snapshot for embedded mode (--cluster-snapshot F): the output of
// `kubectl get nodes,pods -A -o json` (a v1 List whose items are Nodes, Pods and,
// optionally, TrainingJobs), or an object {"nodes":[...],"pods":[...],"trainingJobs":[...]}.
// Loading feeds the same parsers the informers use. Items of other kinds are skipped.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/base/result.h"
#include "extender/objects/k8s_objects.h"

namespace phalanx::extender {

struct Snapshot {
  std::vector<NodeInfo> nodes;
  std::vector<PodInfo> pods;
  std::vector<TrainingJobInfo> training_jobs;
  int skipped = 0;  // items of other kinds
};

// InvalidArgument naming the item ("items[12] (Pod default/x): ...") on a bad object.
Result<Snapshot> ParseSnapshot(std::string_view text);
Result<Snapshot> LoadSnapshotFile(const std::string& path);

}  // namespace phalanx::extender
