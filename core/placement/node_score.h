// Node feasibility and score for one pod (docs/architecture.md §3 step 3, §4 "Node score").
//
// Feasibility answers "can this pod run here now?" with a structured reason (as k8s
// InsufficientResource: numbers kept, the message formatted only when someone reads
// it). Reasons are split by whether preemption could help: GPUs held by lower-priority
// pods (the extender's FailedNodes) versus wrong product, too few GPUs in total,
// unhealthy GPUs, cordoned node or GPUs reserved by a gang plan
// (FailedAndUnresolvableNodes).
//
// The score (0..10, what kube-scheduler's extender API expects) is a weighted mean of
// three components, each 0..10:
//   topology  = 10 * ring(chosen set) / ring(best set of k on the node when empty);
//               10 for one GPU or a fractional share; left out on unknown topology.
//   packing   = 10 * (GPUs in use after placing) / (healthy GPUs): best fit, so partly
//               used nodes fill up and whole nodes stay free for big jobs (k8s
//               MostAllocated). Fractional shares count in milli-GPUs.
//   locality  = for gang members: 10 * (levels - i) / levels where i is the lowest
//               topology level at which the node shares a domain with an already placed
//               member (i = 0 is the same host); 0 if none; left out for non-gang pods.
// total = sum(w_c * s_c) / sum(w_c) over the components that apply.
//
// Pure and thread-compatible: reads a const ClusterState only.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/placement/cluster_state.h"

namespace phalanx::placement {

struct ScoreWeights {
  double topology = 1.0;
  double packing = 1.0;
  double locality = 1.0;
};

struct PodRequest {
  // Whole GPUs wanted; ignored when `milli` < kMilliPerGpu (a one-GPU share).
  int gpus = 1;
  int milli = kMilliPerGpu;
  // Required capacity pool (phalanx.io/gpu.product); nullopt = any pool.
  std::optional<std::string> pool;
  int priority = 0;
  // The pod's gang plan, if any: GPUs it reserved count as free for it. Costs a scan
  // of the plan's members per node; the extender filters planned members to their
  // planned node, so this is for the few nodes of the plan, not the whole cluster.
  std::optional<GangKey> own_plan;
};

enum class UnfitReason {
  kFits = 0,
  kNodeUnschedulable,   // cordoned
  kWrongPool,           // another GPU product
  kTooFewGpus,          // the node has fewer GPUs than requested, in total
  kUnhealthyGpus,       // enough GPUs, but not enough healthy ones
  kReservedByPlans,     // healthy GPUs exist but gang plans reserve them
  kInUseByHigherTiers,  // held by pods of equal or higher priority
  kInUseByLowerTiers,   // would fit once lower-priority holders are preempted
};

struct Feasibility {
  UnfitReason reason = UnfitReason::kFits;
  int requested = 0;    // GPUs (or milli-GPUs for a share)
  int free = 0;         // usable now, same unit
  int preemptible = 0;  // held by strictly lower-priority pods, same unit
  int reserved = 0;     // reserved by other plans, same unit
  int healthy = 0;      // healthy GPUs on the node
  int capacity = 0;     // GPUs on the node
  std::string_view node_pool;

  bool fits() const { return reason == UnfitReason::kFits; }
  // True only for kInUseByLowerTiers: the extender lists the node in FailedNodes
  // (preemption may help) rather than FailedAndUnresolvableNodes.
  bool resolvable_by_preemption() const { return reason == UnfitReason::kInUseByLowerTiers; }
};

// k8s-style message, e.g. "Insufficient nvidia.com/gpu: requested 4, free 2 (2 held by
// lower tiers)" or "node's GPU product is A100, pod needs H100".
std::string FormatFeasibility(const Feasibility& feasibility, std::string_view resource = "nvidia.com/gpu");

Feasibility CheckFeasibility(const ClusterState& state, NodeIndex node, const PodRequest& request);

// Where a gang's other members already are (for locality).
struct GangContext {
  std::span<const NodeIndex> member_nodes;
};

struct NodeScore {
  double total = 0;  // 0..10
  double topology = 0;
  double packing = 0;
  double locality = 0;
  bool topology_known = true;  // false: topology left out of the total
  bool locality_applies = false;
  // The set the score assumed (device_set.h choice); for a share, the GPU chosen (the
  // best-fitting partly used GPU) as a one-bit mask.
  GpuMask gpus = 0;
  double ring_bandwidth_gbps = 0;
  // Rounded total for the extender wire format (0..10).
  int Rounded() const;
};

// Scores a node the pod fits on. FailedPrecondition (with the formatted feasibility)
// if it does not fit; InvalidArgument for a request with gpus < 1 or milli out of range.
Result<NodeScore> ScoreNode(const ClusterState& state, NodeIndex node, const PodRequest& request,
                            const ScoreWeights& weights = {}, const GangContext& gang = {});

// ScoreNode for each of `nodes` without a gang context: out[i] is nullopt where the pod does
// not fit (or nodes[i] < 0), with no message formatted. A whole-GPU score reads only the
// node's topology, healthy GPUs and the GPUs free to the pod, so nodes alike in those are
// scored once per call (prioritize over 5,000 names scored a handful of distinct nodes 5,000
// times). Every out[i] equals what ScoreNode(state, nodes[i], request, weights) returns.
std::vector<std::optional<NodeScore>> ScoreNodes(const ClusterState& state, std::span<const NodeIndex> nodes,
                                                 const PodRequest& request, const ScoreWeights& weights = {});

struct NodeChoice {
  NodeIndex node = kNoNode;
  NodeScore score;
};

// Highest-scoring feasible node (ties: lower free count, then name), scanning the
// request's pool (or every pool). Nullopt if no node fits. What the simulator's
// phalanx policy runs for non-gang pods; the extender lets kube-scheduler choose.
std::optional<NodeChoice> PickBestNode(const ClusterState& state, const PodRequest& request,
                                       const ScoreWeights& weights = {}, const GangContext& gang = {});

}  // namespace phalanx::placement
