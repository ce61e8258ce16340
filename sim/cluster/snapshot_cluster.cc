#include "sim/cluster/snapshot_cluster.h"

#include <fmt/format.h>

#include "core/json/json.h"
#include "extender/objects/snapshot.h"
#include "extender/state/ledger.h"

namespace phalanx::sim {

bool LooksLikeSnapshot(std::string_view text) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos || text[first] != '{') return false;
  auto doc = json::Parse(text);
  if (!doc.ok() || !doc->is_object()) return false;
  return !doc->contains("nodeGroups") && (doc->contains("items") || doc->contains("nodes"));
}

Result<SimCluster> BuildSimClusterFromSnapshot(std::string_view text, const std::string& source) {
  auto snapshot = extender::ParseSnapshot(text);
  if (!snapshot.ok()) return InvalidArgumentError(fmt::format("{}: {}", source, snapshot.status().message()));
  extender::Ledger ledger(SimLevels());
  for (const extender::NodeInfo& node : snapshot->nodes) {
    if (Status st = ledger.UpsertNode(node); !st.ok())
      return InvalidArgumentError(fmt::format("{}: node {}: {}", source, node.name.str(), st.message()));
  }
  int held = 0;
  for (const extender::PodInfo& pod : snapshot->pods) {
    if (pod.node_name.empty() || pod.Terminal()) continue;  // pending pods are the trace's business
    ledger.UpsertPod(pod, MonotonicTime{});
    const extender::PodRecord* rec = ledger.FindPod(pod.uid);
    if ((rec && rec->holding != extender::Holding::kNone) || ledger.mig().FindPod(pod.uid)) ++held;
  }
  if (ledger.state().TotalGpus() == 0 && ledger.mig().TotalCompute() == 0)
    return InvalidArgumentError(fmt::format("{}: the snapshot has no node with GPUs ({} nodes)", source,
                                            snapshot->nodes.size()));
  SimCluster out{ledger.state(), ledger.mig(), held};
  return out;
}

}  // namespace phalanx::sim
