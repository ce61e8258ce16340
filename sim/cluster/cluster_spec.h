// Cluster description for the simulator (docs/cluster-description.md): node groups of
// identical machines laid out over topology levels, parsed strictly from YAML and turned
// into the same placement::ClusterState the extender's ledger uses.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/base/result.h"
#include "core/placement/cluster_state.h"
#include "core/placement/mig_ledger.h"
#include "core/scheduling/queues.h"

namespace phalanx::sim {

enum class IntraNodeTopology { kNvSwitch, kNvlinkPairs, kPcie };

// `gpus` GPUs of every node of a group partitioned with the same MIG layout.
struct MigGroupLayout {
  int gpus = 1;
  std::vector<std::string> profiles;  // e.g. {"3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"}
  int line = 0;
};

struct NodeGroup {
  std::string name;
  int count = 0;
  std::string gpu_model;  // capacity pool (phalanx.io/gpu.product)
  int gpus_per_node = 8;
  IntraNodeTopology topology = IntraNodeTopology::kNvSwitch;
  // Layout over topology levels; 0 = the level is not labelled for this group.
  int nodes_per_nvlink_domain = 0;
  int nodes_per_rack = 0;
  int racks_per_block = 0;
  std::string zone;  // "" = no zone label
  // MIG layouts, applied to the node's GPUs in order (the first `mig[0].gpus` GPUs get
  // the first layout, ...); GPUs after them stay whole.
  std::vector<MigGroupLayout> mig;
  int line = 0;      // YAML line (messages)
  int MigGpus() const;
};

struct SimCluster;

struct ClusterSpec {
  std::string name;
  std::vector<NodeGroup> groups;
  // Set when --cluster was a snapshot (sim/cluster/snapshot_cluster.h): the replay starts
  // from this ledger (copied per policy) and `groups` is empty.
  std::shared_ptr<const SimCluster> snapshot;
  // Team queues (`queues:`, `defaultQueue:`, `crossQueuePreemptionPriority:`): the
  // phalanx policy enforces them; every policy's report shows usage per queue.
  scheduling::QueueConfig queues;
  int TotalGpus() const;  // every GPU, whole or in MIG mode
  int MigGpus() const;    // GPUs in MIG mode
  int TotalNodes() const;
};

// The level keys every simulated ClusterState is built with, narrowest first.
const std::vector<std::string>& SimLevels();
inline constexpr int kLevelHost = 0;
inline constexpr int kLevelNvlinkDomain = 1;
inline constexpr int kLevelRack = 2;
inline constexpr int kLevelBlock = 3;
inline constexpr int kLevelZone = 4;

// Parses the YAML text; `source` names the file in messages. InvalidArgument naming the
// line and field for anything malformed or unknown.
Result<ClusterSpec> ParseClusterSpec(const std::string& yaml_text, const std::string& source);
// A YAML cluster description, or a `kubectl get nodes,pods -A -o json` snapshot
// (detected by content: LooksLikeSnapshot).
Result<ClusterSpec> LoadClusterSpec(const std::string& path);

// What a replay starts from: whole-GPU accounting, MIG devices, and (for a snapshot) the
// pods already bound, which hold their GPUs for the whole replay.
struct SimCluster {
  placement::ClusterState state;
  placement::MigLedger mig;
  int preexisting_pods = 0;
  // Node group (NodeGroup::name) of every node; empty for a snapshot, which has none.
  std::unordered_map<NodeName, std::string> node_groups;
};

// Builds the ledger: one node per group member, named "<group>-<n>", all GPUs healthy;
// GPUs in MIG mode are carved into the group's layouts. Records each node's group.
Result<SimCluster> BuildSimCluster(const ClusterSpec& spec);
Result<placement::ClusterState> BuildClusterState(const ClusterSpec& spec);

}  // namespace phalanx::sim
