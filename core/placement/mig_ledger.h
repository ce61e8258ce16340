// MigLedger: the MIG devices of every node of a cluster and which pod holds which, beside
// ClusterState (which leaves GPUs in MIG mode out of its whole-GPU accounting). Shared by
// the simulator and the extender's ledger. Thread-compatible, like ClusterState.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/base/ids.h"
#include "core/base/status.h"
#include "core/placement/mig.h"

namespace phalanx::placement {

struct MigHolding {
  NodeName node;
  std::vector<int> devices;  // indexes into the node's MigNode::slices()
};

class MigLedger {
 public:
  // Replaces a node's devices. Holdings on devices with the same device_id survive
  // (the device plugin republished); holdings on vanished devices are dropped. An empty
  // list removes the node.
  void SetNode(const NodeName& node, std::vector<MigSlice> slices);
  void RemoveNode(const NodeName& node);

  // Null if the node has no MIG devices.
  const MigNode* Find(const NodeName& node) const;
  const std::unordered_map<NodeName, MigNode>& nodes() const { return nodes_; }

  // AlreadyExists if the pod holds devices; NotFound for the node; FailedPrecondition if a
  // device is out of range or held.
  Status Allocate(const PodUid& pod, const NodeName& node, const std::vector<int>& devices);
  // NotFound if the pod holds nothing.
  Status Release(const PodUid& pod);
  const MigHolding* FindPod(const PodUid& pod) const;

  // Cluster totals in compute slices (reports: MIG usage).
  int TotalCompute() const;
  int UsedCompute() const;
  int HeldDevices() const;

 private:
  std::unordered_map<NodeName, MigNode> nodes_;
  std::unordered_map<PodUid, MigHolding> pods_;
};

}  // namespace phalanx::placement
