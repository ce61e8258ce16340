// ClusterState: who holds which GPU on every node of the cluster (docs/architecture.md §2.5, §4).
//
// The single source of GPU accounting shared by the extender's ledger (which wraps it
// with Kubernetes adapters) and the simulator. A GPU is *free* when it is healthy, on a
// schedulable node, not allocated to a pod (wholly or by a fractional share) and not
// reserved by a gang plan. Planners only ever offer free GPUs, so a GPU reserved by one
// plan is never offered to anyone else (PlanOptions::own_plan lets a plan re-plan over
// its own reservation).
//
// Holders:
//   - a pod (PodUid) holds whole GPUs on exactly one node (Allocate), or a fractional
//     share in milli-GPUs of one GPU (AllocateShare; openb `gpu_milli` pods,
//     time-sliced replicas). Shares on one GPU sum to at most kMilliPerGpu; a GPU
//     carrying any share is not free for whole-GPU work.
//   - a gang plan (GangKey) reserves GPUs for each of its members (Reserve); Commit turns
//     one member's reservation into its pod's allocation, Unreserve drops the rest.
// MIG: a GPU in MIG mode (NodeSpec::mig) is never a whole GPU here: it is neither free
// nor counted in totals, and its MIG devices are accounted by MigLedger (mig_ledger.h),
// as the device plugin's mixed strategy advertises them as nvidia.com/mig-<profile>.
//
// Indexes, all maintained incrementally on every mutation (O(levels) per change):
//   pool (phalanx.io/gpu.product) -> nodes, free/total GPUs, nodes bucketed by free count;
//   (level, domain value) -> nodes, free/total GPUs, histogram of nodes by free count,
//   split per pool. Queries such as "which rack can host 32 x 8 GPUs" are then
//   O(domains x kMaxGpusPerNode) instead of O(nodes).
//
// Invariants (checked by CheckInvariantsForTest): allocated, shared and reserved masks of
// a node are pairwise disjoint and within its GPU range; every index (holder tiers
// included) agrees with the per-node state.
//
// Thread-safety: thread-compatible. Const methods may run concurrently with each other;
// any mutation needs exclusive access (the extender serialises writes through its ledger
// and takes a read lock for filter/prioritize; the simulator is single-threaded).
// NodeIndex values are stable until the node is removed; a removed slot may be reused.
#pragma once

#include <array>
#include <climits>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/base/ids.h"
#include "core/base/result.h"
#include "core/base/status.h"
#include "core/placement/device_set.h"
#include "core/placement/node_name_index.h"

namespace phalanx::placement {

inline constexpr int kMilliPerGpu = 1000;

using NodeIndex = int32_t;
inline constexpr NodeIndex kNoNode = -1;

// Dense ids for pools and domains (per level); never reused while the state lives.
using PoolId = int32_t;
using DomainId = int32_t;
inline constexpr PoolId kNoPool = -1;
inline constexpr DomainId kNoDomain = -1;

// Number of GPUs in `mask`.
int GpuCount(GpuMask mask);
// Ascending GPU indices of `mask`.
std::vector<int> GpuList(GpuMask mask);
// Mask of GPUs 0..n-1.
GpuMask AllGpus(int n);

// One node as the adapters see it (labels, device-plugin topology and health).
struct NodeSpec {
  NodeName name;
  // Capacity pool: the phalanx.io/gpu.product label; "" = nodes without it (one pool).
  std::string pool;
  int gpu_count = 0;  // 0..kMaxGpusPerNode
  // Shared per machine shape (thousands of nodes point at a handful of matrices).
  // Null = unknown topology: every set of k GPUs is taken as equally good.
  std::shared_ptr<const BandwidthMatrix> bandwidth;
  // Bit set = healthy. Bits at or above gpu_count must be clear.
  GpuMask healthy = 0;
  // Domain value per configured level (ClusterState::levels()), same order; "" or a
  // missing trailing entry = the node carries no label for that level, so it belongs
  // to no domain there (a gang that requires the level cannot use it).
  std::vector<std::string> domains;
  // False for cordoned nodes: their GPUs are never free; holdings stay.
  bool schedulable = true;
  // GPUs in MIG mode: their capacity is MIG devices (MigLedger), never whole GPUs.
  GpuMask mig = 0;
};

// GPUs of a node usable as whole GPUs (or fractional shares): healthy and not in MIG mode.
inline GpuMask WholeGpus(const NodeSpec& spec) { return spec.healthy & ~spec.mig; }

// GPUs one gang member gets (or holds) on one node.
struct MemberPlacement {
  NodeName node;
  GpuMask gpus = 0;
  // Bottleneck of the best ring over `gpus` (device_set.h); +inf for one GPU,
  // 0 when the node's topology is unknown.
  double ring_bandwidth_gbps = 0;
};

// What a pod holds: whole GPUs (`milli` == kMilliPerGpu) or a share of one GPU.
struct PodAllocation {
  PodUid pod;
  NodeIndex node = kNoNode;
  GpuMask gpus = 0;
  int milli = kMilliPerGpu;  // per GPU in `gpus`; < kMilliPerGpu only for a single-GPU share
  int priority = 0;          // the pod's priority (preemption reasons in node_score.h)
};

struct Reservation {
  GangKey plan;
  std::vector<MemberPlacement> members;
  std::vector<bool> committed;  // per member; committed members are pod allocations now
};

// GPUs of one node whose highest-priority holder has `priority` (a whole GPU has one
// holder; a shared GPU the highest of its shares).
struct HolderTier {
  int priority = 0;
  GpuMask gpus = 0;
};

// Read-only view of one node's accounting.
struct NodeState {
  NodeSpec spec;
  PoolId pool = kNoPool;
  std::vector<DomainId> domains;  // per level; kNoDomain where unlabelled
  GpuMask allocated = 0;  // wholly allocated to pods
  GpuMask shared = 0;     // carrying fractional shares
  GpuMask reserved = 0;   // reserved by gang plans (uncommitted members)
  std::array<int16_t, kMaxGpusPerNode> share_milli{};  // milli used by shares, per GPU
  std::vector<const PodAllocation*> pods;            // holders on this node
  // Holders summarised by tier, kept on every change of `pods`, so that feasibility can
  // tell GPUs preemption could free from the rest without walking `pods` (scattered
  // reads; node_score.h). Ascending priority, one entry per distinct top priority.
  std::vector<HolderTier> tiers;
  int lowest_priority = INT_MAX;  // lowest priority of any holder (shares included); INT_MAX if none
  // Free = healthy & ~(allocated | shared | reserved), and 0 when unschedulable.
  GpuMask free = 0;
};

struct DomainPoolSlice {
  PoolId pool = kNoPool;
  int nodes = 0;
  int free_gpus = 0;
  int total_gpus = 0;  // healthy GPUs on schedulable nodes
  // free_hist[f] = nodes of this slice with exactly f free GPUs.
  std::array<int32_t, kMaxGpusPerNode + 1> free_hist{};
};

struct DomainInfo {
  int level = 0;
  std::string value;
  std::vector<NodeIndex> nodes;          // all pools
  std::vector<DomainPoolSlice> by_pool;  // usually one entry
  const DomainPoolSlice* Slice(PoolId pool) const;  // null if the domain has no such node
};

struct PoolInfo {
  std::string name;
  std::vector<NodeIndex> nodes;
  int free_gpus = 0;
  int total_gpus = 0;
  // buckets[f] = nodes with exactly f free GPUs (best fit without a scan).
  std::array<std::vector<NodeIndex>, kMaxGpusPerNode + 1> buckets;
};

// What RemoveNode dropped, so the caller can fix its own records.
struct NodeRemoval {
  std::vector<PodUid> pods;     // allocations that were on the node
  std::vector<GangKey> plans;   // reservations that had a member there (now unreserved)
};

// A number naming one content of a ClusterState, unique in the process: every mutation takes a
// fresh one, a copy shares its source's (same content), and a moved-from state takes a fresh one.
class StateStamp {
 public:
  StateStamp() : value_(Next()) {}
  StateStamp(const StateStamp&) = default;
  StateStamp& operator=(const StateStamp&) = default;
  StateStamp(StateStamp&& other) noexcept : value_(other.value_) { other.Renew(); }
  StateStamp& operator=(StateStamp&& other) noexcept {
    value_ = other.value_;
    other.Renew();
    return *this;
  }
  void Renew() { value_ = Next(); }
  uint64_t value() const { return value_; }

 private:
  static uint64_t Next();
  uint64_t value_;
};

class ClusterState {
 public:
  // `levels`: topology label keys, lowest (narrowest) first, e.g. {"kubernetes.io/hostname",
  // "phalanx.io/nvlink-domain", "topology.kubernetes.io/rack", "phalanx.io/block",
  // "topology.kubernetes.io/zone"}.
  explicit ClusterState(std::vector<std::string> levels = {});
  ClusterState(const ClusterState&);
  ClusterState& operator=(const ClusterState&);
  ClusterState(ClusterState&&) noexcept;
  ClusterState& operator=(ClusterState&&) noexcept;
  ~ClusterState();

  const std::vector<std::string>& levels() const { return levels_; }
  // Index of a level key; -1 if not configured.
  int LevelIndex(std::string_view key) const;

  // --- nodes ---------------------------------------------------------------------
  // AlreadyExists if the name is taken; InvalidArgument for gpu_count outside
  // 0..kMaxGpusPerNode, health bits beyond gpu_count or a matrix of another size.
  Result<NodeIndex> AddNode(NodeSpec spec);
  // Replaces labels, health, topology and schedulability; holdings stay. NotFound;
  // InvalidArgument as AddNode; FailedPrecondition if gpu_count shrinks below a held GPU
  // (remove and re-add the node instead).
  Status UpdateNode(NodeSpec spec);
  // Drops the node with every allocation on it and every reservation that used it.
  Result<NodeRemoval> RemoveNode(const NodeName& name);

  std::optional<NodeIndex> FindNode(const NodeName& name) const;
  // Without building a NodeName (a string copy, an allocation for names over 15 bytes): the
  // extender resolves up to 5,000 request names per filter or prioritize.
  std::optional<NodeIndex> FindNode(std::string_view name) const;
  // FindNode for each name (out[i] = -1 where unknown), the lookups overlapping in memory
  // (NodeNameIndex::FindMany). `out` has names.size() entries.
  void FindNodes(std::span<const std::string_view> names, std::span<NodeIndex> out) const;
  // Valid for indexes returned by FindNode/AddNode/Nodes and not removed since.
  const NodeState& node(NodeIndex index) const { return nodes_[static_cast<size_t>(index)]; }
  // Every live node, in no particular order.
  const std::vector<NodeIndex>& Nodes() const { return live_; }
  int NodeCount() const { return static_cast<int>(live_.size()); }
  // Upper bound of NodeIndex values (for dense per-node side tables).
  int NodeSlots() const { return static_cast<int>(nodes_.size()); }

  // --- holdings ------------------------------------------------------------------
  // Whole GPUs to a pod. AlreadyExists if the pod holds something; NotFound for the
  // node; InvalidArgument for an empty mask or GPUs outside the node; FailedPrecondition
  // if any GPU is allocated, shared or reserved (unhealthy GPUs may be allocated: the
  // ledger records what pods really use).
  Status Allocate(const PodUid& pod, const NodeName& node, GpuMask gpus, int priority = 0);
  // A fractional share (1..kMilliPerGpu-1 milli-GPUs) of one GPU. FailedPrecondition if
  // the GPU is wholly allocated, reserved, or has fewer than `milli` left.
  Status AllocateShare(const PodUid& pod, const NodeName& node, int gpu, int milli, int priority = 0);
  // NotFound if the pod holds nothing.
  Status Release(const PodUid& pod);
  const PodAllocation* FindPod(const PodUid& pod) const;

  // All-or-nothing reservation of every member's GPUs. AlreadyExists for a plan that
  // already has a reservation; NotFound for an unknown node; FailedPrecondition if any
  // GPU is not free or two members overlap.
  Status Reserve(const GangKey& plan, std::span<const MemberPlacement> members);
  // Releases every uncommitted member. NotFound if the plan has no reservation.
  Status Unreserve(const GangKey& plan);
  // Member `member` of `plan` becomes `pod`'s allocation. NotFound (plan), OutOfRange
  // (member), AlreadyExists (pod holds something), FailedPrecondition (member already
  // committed). The reservation disappears once every member is committed.
  Status Commit(const GangKey& plan, int member, const PodUid& pod, int priority = 0);
  const Reservation* FindReservation(const GangKey& plan) const;
  // The plan reserving `gpu` on `node`, or null.
  const GangKey* ReservedBy(NodeIndex node, int gpu) const;

  // --- indexes -------------------------------------------------------------------
  PoolId FindPool(std::string_view pool) const;  // kNoPool if no node has it
  int PoolCount() const { return static_cast<int>(pools_.size()); }
  const PoolInfo& pool(PoolId id) const { return pools_[static_cast<size_t>(id)]; }
  DomainId FindDomain(int level, std::string_view value) const;  // kNoDomain if unknown
  int DomainCount(int level) const;
  const DomainInfo& domain(int level, DomainId id) const;
  // Free / healthy-schedulable GPUs in the cluster.
  int FreeGpus() const { return free_gpus_; }
  int TotalGpus() const { return total_gpus_; }
  // Milli-GPUs still usable on one GPU: 1000 if free, 1000 - shares if shared (and
  // healthy, schedulable, unreserved), else 0.
  int FreeMilli(NodeIndex node, int gpu) const;

  // Recomputes every index from scratch and compares; Internal with the first mismatch.
  Status CheckInvariantsForTest() const;

  // Equal for two reads exactly when nothing changed in between (StateStamp): every mutator
  // above renews it, whether or not it succeeds. A reader may keep an answer derived from this
  // state under its stamp (the extender's no-fit filter reply: extender/verbs/no_fit_cache.h).
  uint64_t stamp() const { return stamp_.value(); }

 private:
  // Per-slot positions inside the index containers, for O(1) removal.
  struct SlotIndex {
    int32_t live_pos = -1;
    int32_t pool_pos = -1;
    int32_t bucket_pos = -1;
    std::vector<int32_t> domain_pos;  // per level, position in DomainInfo::nodes
    int indexed_free = 0;   // free GPUs the counters currently hold for this node
    int indexed_total = 0;  // healthy GPUs of a schedulable node, as counted
  };

  Status ValidateSpec(const NodeSpec& spec) const;
  PoolId InternPool(const std::string& name);
  DomainId InternDomain(int level, const std::string& value);
  DomainPoolSlice& SliceFor(int level, DomainId id, PoolId pool);
  void Attach(NodeIndex index);  // membership and counters
  void Detach(NodeIndex index);
  void AddCounts(NodeIndex index);
  void RemoveCounts(NodeIndex index);
  void Recount(NodeIndex index);  // after any change of a node's holdings or health
  void RebindPods();              // NodeState::pods point into pods_; fix after a copy
  void DropPodFromNode(const PodAllocation& alloc);
  static void Retier(NodeState& node);  // rebuilds tiers/lowest_priority from pods
  Status CheckFree(const NodeState& node, GpuMask gpus, const std::string& what) const;

  std::vector<std::string> levels_;
  std::vector<NodeState> nodes_;  // slots; a removed slot has an empty name
  std::vector<SlotIndex> slots_;
  std::vector<NodeIndex> live_;
  std::vector<NodeIndex> free_slots_;
  std::unordered_map<NodeName, NodeIndex> by_name_;
  NodeNameIndex name_index_;  // same mapping, flat: FindNode's hot path (extender filter)
  std::unordered_map<PodUid, PodAllocation> pods_;
  std::unordered_map<GangKey, Reservation> plans_;
  std::vector<PoolInfo> pools_;
  std::unordered_map<std::string, PoolId> pool_ids_;
  std::vector<std::vector<DomainInfo>> domains_;                       // [level][id]
  std::vector<std::unordered_map<std::string, DomainId>> domain_ids_;  // [level]
  int free_gpus_ = 0;
  int total_gpus_ = 0;
  StateStamp stamp_;
};

}  // namespace phalanx::placement
