// Cluster description for the simulator (docs/cluster-description.md): node groups of
// identical machines laid out over topology levels, parsed strictly from YAML and turned
// into the same placement::ClusterState the extender's ledger uses.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/base/result.h"
#include "core/placement/cluster_state.h"

namespace phalanx::sim {

enum class IntraNodeTopology { kNvSwitch, kNvlinkPairs, kPcie };

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
  int line = 0;      // YAML line (messages)
};

struct ClusterSpec {
  std::string name;
  std::vector<NodeGroup> groups;
  int TotalGpus() const;
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
Result<ClusterSpec> LoadClusterSpec(const std::string& path);

// Builds the ledger: one node per group member, named "<group>-<n>", all GPUs healthy.
Result<placement::ClusterState> BuildClusterState(const ClusterSpec& spec);

}  // namespace phalanx::sim
