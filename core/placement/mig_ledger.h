// MigLedger: the MIG devices of every node of a cluster and which pod holds which, beside
// ClusterState (which leaves GPUs in MIG mode out of its whole-GPU accounting). Shared by
// the simulator and the extender's ledger. Thread-compatible, like ClusterState.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/base/ids.h"
#include "core/base/status.h"
#include "core/placement/mig.h"
#include "core/placement/node_name_index.h"

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

  MigLedger() = default;
  MigLedger(const MigLedger& other);
  MigLedger& operator=(const MigLedger& other);
  MigLedger(MigLedger&&) noexcept = default;  // map nodes stay put: the index stays valid
  MigLedger& operator=(MigLedger&&) noexcept = default;

  // Null if the node has no MIG devices.
  const MigNode* Find(const NodeName& node) const { return Find(std::string_view(node.str())); }
  // Without building a NodeName: the extender's per-name lookup of a filter or prioritize.
  const MigNode* Find(std::string_view node) const;
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
  using Entry = std::unordered_map<NodeName, MigNode>::value_type;
  void Index(Entry& entry);
  void Unindex(const NodeName& node);
  void Reindex();  // after a copy: the slots point into this ledger's map

  std::unordered_map<NodeName, MigNode> nodes_;  // nodes() keeps its order for the simulator
  // The same nodes by name in one flat table (node_name_index.h): a prioritize resolves up
  // to 5,000 names, and hashing into nodes_ was 40 % of it.
  NodeNameIndex index_;
  std::vector<Entry*> slots_;  // index value -> entry of nodes_; null when free
  std::vector<int32_t> free_slots_;
  std::unordered_map<PodUid, MigHolding> pods_;
};

}  // namespace phalanx::placement
