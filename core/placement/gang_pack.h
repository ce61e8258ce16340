// Capacity arithmetic and member packing shared by the gang planner and preemption
// (internal to core/placement; the algorithm is described in gang_plan.h).
#pragma once

#include <unordered_map>
#include <vector>

#include "core/placement/cluster_state.h"
#include "core/placement/free_view.h"
#include "core/placement/gang_plan.h"

namespace phalanx::placement {

// What a scope (a pool, or a domain's slice of a pool) offers a gang.
struct ScopeCapacity {
  int members = 0;  // sum over nodes of floor(free / gpus_per_member)
  int free = 0;     // free GPUs
};

// Pool `pool` under the view.
ScopeCapacity PoolCapacity(const FreeView& view, PoolId pool, int gpus_per_member);

// Capacity of every domain at `level` restricted to `pool`, indexed by DomainId
// (domains without nodes of the pool have zero capacity and `present` false).
struct DomainCapacities {
  std::vector<ScopeCapacity> by_domain;
  std::vector<bool> present;
};
DomainCapacities LevelCapacities(const FreeView& view, int level, PoolId pool, int gpus_per_member);

// Places `members` members on the candidate nodes (fewest nodes, then best fit) and
// chooses each member's GPUs. `nodes` = the scope's nodes (any pool; filtered to
// `pool`); nullptr = every node of the pool. Precondition: the scope's capacity is at
// least `members` (then packing always succeeds). Fills members and quality.nodes_used,
// min_ring_bandwidth_gbps, mean_topology_ratio.
void PackMembers(const FreeView& view, PoolId pool, const std::vector<NodeIndex>* nodes, int members,
                 int gpus_per_member, GangPlan& plan);

}  // namespace phalanx::placement
