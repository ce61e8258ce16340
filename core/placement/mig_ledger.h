// MigLedger: the MIG devices of every node of a cluster and which pod holds which, beside
// ClusterState (which leaves GPUs in MIG mode out of its whole-GPU accounting). Shared by
// the simulator and the extender's ledger. Thread-compatible, like ClusterState.
#pragma once

#include <climits>
#include <cstdint>
#include <optional>
#include <span>
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
  int priority = 0;          // the holder's priority
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
  // A node's devices with, per device index, its holder's priority where a pod holds it on
  // a healthy GPU and kNotHeld anywhere else: the extender's filter counts the devices held
  // by lower tiers in one read of a small array, without looking each holder up (or reading
  // the devices' MigSlice). node == nullptr: no MIG devices.
  static constexpr int32_t kNotHeld = INT32_MAX;
  struct NodeView {
    const MigNode* node = nullptr;
    std::span<const int32_t> held_priority;
    // Lowest holder priority on the node (kNotHeld if nothing is held): a request of this
    // priority or below finds no lower-tier holder without reading held_priority.
    int32_t lowest_held = kNotHeld;
  };
  NodeView View(std::string_view node) const;

  // AlreadyExists if the pod holds devices; NotFound for the node; FailedPrecondition if a
  // device is out of range or held. `priority`: the pod's (View's held_priority).
  Status Allocate(const PodUid& pod, const NodeName& node, const std::vector<int>& devices, int priority = 0);
  // NotFound if the pod holds nothing.
  Status Release(const PodUid& pod);
  const MigHolding* FindPod(const PodUid& pod) const;

  // Cluster totals in compute slices (reports: MIG usage).
  int TotalCompute() const;
  int UsedCompute() const;
  int HeldDevices() const;

 private:
  using Entry = std::unordered_map<NodeName, MigNode>::value_type;
  struct Slot {
    Entry* entry = nullptr;  // null when free
    std::vector<int32_t>* priority = nullptr;  // priorities_ of the node
    int32_t lowest_held = kNotHeld;            // min of *priority
  };
  void Index(Entry& entry);
  void Unindex(const NodeName& node);
  void Reindex();  // after a copy: the slots point into this ledger's maps
  const Slot* FindSlot(std::string_view node) const;
  void UpdateLowest(const NodeName& node);  // after the node's priorities changed

  std::unordered_map<NodeName, MigNode> nodes_;  // nodes() keeps its order for the simulator
  std::unordered_map<NodeName, std::vector<int32_t>> priorities_;  // per node: View's held_priority
  // The same nodes by name in one flat table (node_name_index.h): a prioritize resolves up
  // to 5,000 names, and hashing into nodes_ was 40 % of it.
  NodeNameIndex index_;
  std::vector<Slot> slots_;  // index value -> the node's entries
  std::vector<int32_t> free_slots_;
  std::unordered_map<PodUid, MigHolding> pods_;
};

}  // namespace phalanx::placement
