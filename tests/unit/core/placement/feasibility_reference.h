// CheckFeasibility as it was before the holder tiers (node_score.cc): it walks every pod
// on the node to tell lower-tier holdings from the rest. Slow but obviously right; the
// equivalence test checks the production path against it on random clusters.
#pragma once

#include <algorithm>
#include <array>
#include <bit>

#include "core/placement/node_score.h"

namespace phalanx::placement::reference {
inline bool IsShare(const PodRequest& r) { return r.milli < kMilliPerGpu; }

// GPUs of `node` reserved by the pod's own plan (they count as free for it).
inline GpuMask OwnReserved(const ClusterState& s, NodeIndex node, const PodRequest& r) {
  if (!r.own_plan) return 0;
  const Reservation* res = s.FindReservation(*r.own_plan);
  if (!res) return 0;
  const NodeState& n = s.node(node);
  GpuMask mask = 0;
  for (size_t m = 0; m < res->members.size(); ++m)
    if (!res->committed[m] && res->members[m].node == n.spec.name) mask |= res->members[m].gpus;
  return mask & WholeGpus(n.spec);
}

// Healthy GPUs wholly held by pods of strictly lower priority, and per GPU the milli
// held by lower-priority shares.
struct LowerTier {
  GpuMask whole = 0;
  std::array<int, kMaxGpusPerNode> share_milli{};
};

inline LowerTier LowerTierHoldings(const NodeState& n, int priority) {
  LowerTier out;
  for (const PodAllocation* p : n.pods) {
    if (p->priority >= priority) continue;
    if (p->milli >= kMilliPerGpu) out.whole |= p->gpus & WholeGpus(n.spec);
    else out.share_milli[static_cast<size_t>(std::countr_zero(p->gpus))] += p->milli;
  }
  return out;
}

inline Feasibility CheckShare(const ClusterState& s, NodeIndex node, const PodRequest& r, Feasibility f) {
  const NodeState& n = s.node(node);
  f.requested = r.milli;
  if (f.capacity == 0) {
    f.reason = UnfitReason::kTooFewGpus;
    return f;
  }
  if (f.healthy == 0) {
    f.reason = UnfitReason::kUnhealthyGpus;
    return f;
  }
  const LowerTier lower = LowerTierHoldings(n, r.priority);
  bool lower_helps = false;
  for (int g = 0; g < n.spec.gpu_count; ++g) {
    const GpuMask bit = GpuMask{1} << g;
    if (!(WholeGpus(n.spec) & bit)) continue;
    const int free = s.FreeMilli(node, g);
    f.free = std::max(f.free, free);
    if (n.reserved & bit) {
      f.reserved = kMilliPerGpu;
      continue;
    }
    // Milli this GPU would gain if its lower-tier holders were preempted.
    const int gain = (lower.whole & bit) ? kMilliPerGpu : lower.share_milli[static_cast<size_t>(g)];
    f.preemptible = std::max(f.preemptible, gain);
    if (free + gain >= r.milli) lower_helps = true;
  }
  if (f.free >= r.milli) f.reason = UnfitReason::kFits;
  else if (lower_helps) f.reason = UnfitReason::kInUseByLowerTiers;
  else if (f.reserved > 0) f.reason = UnfitReason::kReservedByPlans;
  else f.reason = UnfitReason::kInUseByHigherTiers;
  return f;
}

inline Feasibility ReferenceCheckFeasibility(const ClusterState& s, NodeIndex node, const PodRequest& r) {
  const NodeState& n = s.node(node);
  Feasibility f;
  f.capacity = n.spec.gpu_count - std::popcount(n.spec.mig);  // MIG-mode GPUs are not whole GPUs
  f.healthy = std::popcount(WholeGpus(n.spec));
  f.node_pool = n.spec.pool;
  if (r.pool && n.spec.pool != *r.pool) {
    f.reason = UnfitReason::kWrongPool;
    return f;
  }
  if (!n.spec.schedulable) {
    f.reason = UnfitReason::kNodeUnschedulable;
    return f;
  }
  if (IsShare(r)) return CheckShare(s, node, r, f);
  f.requested = r.gpus;
  if (f.capacity < r.gpus) {
    f.reason = UnfitReason::kTooFewGpus;
    return f;
  }
  if (f.healthy < r.gpus) {
    f.reason = UnfitReason::kUnhealthyGpus;
    return f;
  }
  const GpuMask own = OwnReserved(s, node, r);
  f.free = std::popcount(n.free | own);
  if (f.free >= r.gpus) return f;
  const LowerTier lower = LowerTierHoldings(n, r.priority);
  GpuMask preemptible = lower.whole;
  for (int g = 0; g < n.spec.gpu_count; ++g) {
    const GpuMask bit = GpuMask{1} << g;
    // A shared GPU comes free only if every share on it is of a lower tier.
    if ((n.shared & bit) && (WholeGpus(n.spec) & bit) &&
        lower.share_milli[static_cast<size_t>(g)] == n.share_milli[static_cast<size_t>(g)]) {
      preemptible |= bit;
    }
  }
  f.preemptible = std::popcount(preemptible);
  f.reserved = std::popcount(n.reserved & WholeGpus(n.spec) & ~own);
  if (f.free + f.preemptible >= r.gpus) f.reason = UnfitReason::kInUseByLowerTiers;
  else if (f.reserved > 0 && f.free + f.preemptible + f.reserved >= r.gpus) f.reason = UnfitReason::kReservedByPlans;
  else f.reason = UnfitReason::kInUseByHigherTiers;
  return f;
}

}  // namespace phalanx::placement::reference
