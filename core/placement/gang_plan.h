// Gang planning (docs/architecture.md §2.1, §3 step 2, §4 "Gang plan"): place every member of a gang
// at once, or say precisely why it cannot be placed.
//
// Algorithm, per capacity pool (a gang never spans pools):
//   1. A node can host floor(free / gpus_per_member) members. Domain capacity at a
//      level comes from the ClusterState histograms: O(domains x kMaxGpusPerNode).
//   2. Required level L: the fitting domain at L with the least free capacity (best
//      fit: big domains stay whole for big gangs; ties by fewest free GPUs, then name).
//      Preferred level L: try L, then each wider level, then the whole pool.
//      No topology: the whole pool.
//   3. Inside the domain: fewest nodes first (take the node hosting the most members;
//      once one node can host all remaining members, take the smallest such node),
//      ties broken towards nodes left fullest (best fit), then by name.
//   4. GPUs per member: ChooseDeviceSet (device_set.h) on what is left of the node,
//      one member after another, memoised by (topology, free mask, count) because
//      thousands of identical empty nodes give the same answer.
// Only free GPUs are used (cluster_state.h): GPUs reserved by another plan are never
// offered. With no pool given, every pool is tried and the best-fitting pool wins.
//
// Cost: O(domains x 65 + n log n) for the n candidate nodes of the chosen domain, plus
// one memoised device-set choice per member; 256 x 8 GPUs over 5,000 nodes is the
// docs/architecture.md §6 target (<= 5 ms; bench/core/placement/gang_plan_bench.cc).
//
// Pure and thread-compatible: reads a const ClusterState only.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/placement/cluster_state.h"

namespace phalanx::placement {

enum class TopologyMode {
  kNone,       // anywhere in the pool
  kRequired,   // the whole gang in one domain at `level`, or not at all
  kPreferred,  // `level` if possible, else wider levels, else anywhere
};

struct GangSpec {
  GangKey key;
  int members = 1;
  int gpus_per_member = 1;  // whole GPUs
  // Required capacity pool; nullopt = any one pool.
  std::optional<std::string> pool;
  // A key of ClusterState::levels() (e.g. "topology.kubernetes.io/rack"); ignored for kNone.
  std::string level;
  TopologyMode mode = TopologyMode::kNone;
};

struct PlanOptions {
  // GPUs reserved by this plan count as free (re-planning an admitted gang).
  std::optional<GangKey> own_plan;
  // Pods whose GPUs count as free (preemption's hypothetical state). Unknown pods are
  // ignored; a shared GPU becomes free only if every share on it is listed.
  std::span<const PodUid> assume_released;
  // Only this domain at the spec's level (kRequired only); used by preemption.
  std::optional<std::string> only_domain;
};

struct PlanQuality {
  int nodes_used = 0;
  // Lowest ring bandwidth over members (GB/s); +inf if every member has one GPU;
  // 0 if a node's topology is unknown.
  double min_ring_bandwidth_gbps = 0;
  // Mean over members of ring / best ring the same node shape offers for that many
  // GPUs (1 = every member got a best set; unknown topology counts as 1).
  double mean_topology_ratio = 1;
  // GPUs still free in the domain used (or pool, for "anywhere") after the plan.
  int free_gpus_left_in_domain = 0;
  // GPUs still free in the plan's pool after the plan.
  int free_gpus_left_in_pool = 0;
  // True if a preferred level could not be honoured and a wider one was used.
  bool fell_back = false;
};

struct GangPlan {
  GangKey key;
  std::string pool;
  std::vector<MemberPlacement> members;  // index = member ordinal
  // Level actually used (index into ClusterState::levels()), -1 = anywhere in the pool.
  int level = -1;
  std::string level_key;  // "" for anywhere
  std::string domain;     // domain value at `level`; "" for anywhere
  PlanQuality quality;
};

enum class NoFitReason {
  kNoPool,               // the requested pool has no schedulable node
  kTooFewGpusInPool,     // not enough free GPUs in any pool, whatever the layout
  kTooFewMembersFit,     // enough GPUs, but not in chunks of gpus_per_member per node
  kNoDomainLargeEnough,  // required level: no single domain fits the gang
  kNodesUnlabelled,      // required level: no node in the pool carries that label
};

struct NoFit {
  NoFitReason reason = NoFitReason::kTooFewGpusInPool;
  int members = 0;
  int gpus_per_member = 0;
  std::string pool;         // best pool considered ("" = unlabelled pool)
  std::string level_key;    // required level, if any
  // Best candidate seen: members it could host and free GPUs it has.
  std::string best_domain;  // domain value, or "" for a pool
  int best_members = 0;
  int best_free_gpus = 0;
  // e.g. "needs 4 members x 8 GPUs (32 GPUs) in one topology.kubernetes.io/rack; the
  // best rack (r7) has 24 free GPUs and fits 3 members".
  std::string Message() const;
};

struct GangPlanResult {
  std::optional<GangPlan> plan;  // set iff the gang fits
  std::optional<NoFit> no_fit;   // set iff it does not
  bool fits() const { return plan.has_value(); }
};

// InvalidArgument for members < 1, gpus_per_member outside 1..kMaxGpusPerNode, or a
// level that is not configured (modes other than kNone). "Does not fit" is not an
// error: it is a GangPlanResult with no_fit set.
Result<GangPlanResult> PlanGang(const ClusterState& state, const GangSpec& spec,
                                const PlanOptions& options = {});

// Convenience: reserves a plan's GPUs under its key (ClusterState::Reserve).
Status ReservePlan(ClusterState& state, const GangPlan& plan);

}  // namespace phalanx::placement
