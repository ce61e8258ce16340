// FreeView: the free GPUs of a ClusterState as one planning pass sees them (internal to
// core/placement).
//
// A plan may count more GPUs as free than the state does: the GPUs its own reservation
// holds (re-planning an admitted gang) and the GPUs of pods assumed released
// (preemption's hypothetical state). Rather than copying a 5,000-node state, the view
// keeps a sparse overlay of extra free GPUs per node and adjusts the state's counters
// by the overlay's difference. Only schedulable nodes and healthy GPUs gain anything.
//
// Borrows the state (which must outlive the view and not change meanwhile).
// Thread-compatible.
#pragma once

#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/placement/cluster_state.h"

namespace phalanx::placement {

class FreeView {
 public:
  FreeView(const ClusterState& state, const std::optional<GangKey>& own_plan, std::span<const PodUid> released);

  const ClusterState& state() const { return state_; }
  GpuMask Free(NodeIndex node) const {
    if (extra_.empty()) return state_.node(node).free;
    auto it = extra_.find(node);
    return it == extra_.end() ? state_.node(node).free : state_.node(node).free | it->second;
  }
  bool HasOverlay(NodeIndex node) const { return !extra_.empty() && extra_.contains(node); }
  // Nodes that gain GPUs, with the extra mask.
  const std::unordered_map<NodeIndex, GpuMask>& overlay() const { return extra_; }
  // Adds GPUs (already checked healthy and schedulable) to a node's extra set.
  void AddExtra(NodeIndex node, GpuMask gpus);

  // Members of `gpus_per_member` GPUs that `free` GPUs host.
  static int Capacity(int free, int gpus_per_member) { return free / gpus_per_member; }

 private:
  const ClusterState& state_;
  std::unordered_map<NodeIndex, GpuMask> extra_;
};

// GPUs a pod frees when released, given the other shares on its GPU that are released
// too (`released_milli` = milli released so far on that GPU, including this pod).
// Whole allocations free their healthy GPUs; a share frees its GPU once every share on
// it is released.
GpuMask FreedBy(const ClusterState& state, const PodAllocation& pod, int released_milli_on_gpu);

}  // namespace phalanx::placement
