// Candidate node lookups shared by filter and prioritize. Internal to verbs/.
#pragma once

#include <string_view>
#include <vector>

#include "core/placement/cluster_state.h"

namespace phalanx::extender::internal {

// Each candidate's node index (-1: not in the ledger), resolved before any node is judged and
// as one batch (ClusterState::FindNodes): the lookups do not depend on one another, so their
// cache misses overlap (one FindNode per name was ~20 % of a 5,000-name filter, mostly
// waiting on memory). Shared lock held.
inline std::vector<placement::NodeIndex> ResolveNames(const placement::ClusterState& state,
                                                      const std::vector<std::string_view>& names) {
  std::vector<placement::NodeIndex> out(names.size());
  state.FindNodes(names, out);
  return out;
}

}  // namespace phalanx::extender::internal
