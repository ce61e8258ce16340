// A cluster snapshot (`kubectl get nodes,pods -A -o json`) as simulator input: read with
// the extender's --cluster-snapshot reader (extender/objects/snapshot.h) and turned into the
// extender's own ledger (extender::Ledger), so nodes, GPU topology, health, MIG devices
// and the pods already bound — which hold their GPUs for the whole replay — are exactly
// what the extender would see. Pending pods of the snapshot are ignored (the workload
// comes from the trace).
#pragma once

#include <string>
#include <string_view>

#include "core/base/result.h"
#include "sim/cluster/cluster_spec.h"

namespace phalanx::sim {

// True if `text` is a snapshot rather than a YAML cluster description: a JSON object
// with "items" (a v1 List) or "nodes", and no "nodeGroups".
bool LooksLikeSnapshot(std::string_view text);

// Parses the snapshot and builds the ledger. InvalidArgument naming the item for a bad
// object (the extender's messages); InvalidArgument if it has no node with GPUs.
Result<SimCluster> BuildSimClusterFromSnapshot(std::string_view text, const std::string& source);

}  // namespace phalanx::sim
