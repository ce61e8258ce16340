// Member placement for the baseline policies (what stock schedulers do; not Phalanx
// logic, which is core/placement). GPUs inside a node are the lowest free indices, as a
// topology-unaware device plugin hands them out.
#pragma once

#include <optional>
#include <vector>

#include "core/placement/cluster_state.h"
#include "sim/engine/simulator.h"
#include "sim/model/job.h"

namespace phalanx::sim {

enum class NodeOrder {
  kFirstFit,  // first node (in cluster order) with room
  kBestFit,   // node with the fewest free GPUs that still fit (bin packing)
  kSpread,    // node with the most free GPUs (kube-scheduler LeastAllocated)
};

// Places `members` x `gpus` GPUs in one pool (any pool for nullopt: the first that
// fits, in pool order). Nullopt if they do not all fit now.
std::optional<std::vector<placement::MemberPlacement>> PlaceMembers(const placement::ClusterState& state,
                                                                    const std::optional<std::string>& pool,
                                                                    int members, int gpus, NodeOrder order);

struct SharePlacement {
  NodeName node;
  int gpu = 0;
};
// A one-GPU share of `milli`: best fit = the GPU with the least room that fits,
// spread = the most room, first fit = the first GPU.
std::optional<SharePlacement> PlaceShare(const placement::ClusterState& state, const std::optional<std::string>& pool,
                                         int milli, NodeOrder order);

// A MIG job as a topology-unaware stack places it: the node by `order` among those with
// enough free devices of the profile (first fit = node name order, best fit = fewest
// free MIG compute slices, spread = most), then that node's lowest free devices.
std::optional<MigPlacement> PlaceMigDevices(const Simulator& sim, const Job& job, NodeOrder order);

// Nodes with MIG devices in the job's pool (every pool for nullopt), name order.
std::vector<NodeName> MigNodesInPool(const Simulator& sim, const std::optional<std::string>& pool);

// Free GPUs in the job's pool (every pool for nullopt).
int PoolFreeGpus(const placement::ClusterState& state, const std::optional<std::string>& pool);

}  // namespace phalanx::sim
