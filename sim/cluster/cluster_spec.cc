#include "sim/cluster/cluster_spec.h"

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "core/placement/topology_bandwidth.h"
#include "core/topology/reference_machines.h"

namespace phalanx::sim {
namespace {

Status At(const std::string& source, const YAML::Node& node, const std::string& msg) {
  return InvalidArgumentError(fmt::format("{}:{}: {}", source, node.Mark().line + 1, msg));
}

Result<int> GetInt(const std::string& source, const YAML::Node& node, const std::string& field, int lo, int hi) {
  try {
    int v = node.as<int>();
    if (v < lo || v > hi) return At(source, node, fmt::format("{} must be in {}..{}, got {}", field, lo, hi, v));
    return v;
  } catch (const YAML::Exception&) {
    return At(source, node, fmt::format("{} must be an integer", field));
  }
}

Result<std::string> GetString(const std::string& source, const YAML::Node& node, const std::string& field) {
  if (!node.IsScalar()) return At(source, node, fmt::format("{} must be a string", field));
  return node.as<std::string>();
}

Result<IntraNodeTopology> ParseTopology(const std::string& source, const YAML::Node& node) {
  PHX_ASSIGN_OR_RETURN(std::string t, GetString(source, node, "topology"));
  if (t == "nvswitch") return IntraNodeTopology::kNvSwitch;
  if (t == "nvlink-pairs") return IntraNodeTopology::kNvlinkPairs;
  if (t == "pcie") return IntraNodeTopology::kPcie;
  return At(source, node, fmt::format("topology must be nvswitch | nvlink-pairs | pcie, got \"{}\"", t));
}

Result<NodeGroup> ParseGroup(const std::string& source, const YAML::Node& g, int index) {
  if (!g.IsMap()) return At(source, g, fmt::format("nodeGroups[{}] must be a mapping", index));
  NodeGroup out;
  out.line = static_cast<int>(g.Mark().line) + 1;
  static const std::set<std::string> kKnown = {"name",         "count",        "gpuModel",      "gpusPerNode",
                                               "topology",     "nodesPerRack", "racksPerBlock", "nodesPerNvlinkDomain",
                                               "zone"};
  for (const auto& kv : g) {
    const std::string key = kv.first.as<std::string>();
    if (!kKnown.contains(key)) return At(source, kv.first, fmt::format("nodeGroups[{}]: unknown field \"{}\"", index, key));
  }
  auto need = [&](const char* key) -> Status {
    if (!g[key]) return At(source, g, fmt::format("nodeGroups[{}]: missing field \"{}\"", index, key));
    return OkStatus();
  };
  PHX_RETURN_IF_ERROR(need("name"));
  PHX_RETURN_IF_ERROR(need("count"));
  PHX_RETURN_IF_ERROR(need("gpuModel"));
  PHX_ASSIGN_OR_RETURN(out.name, GetString(source, g["name"], "name"));
  PHX_ASSIGN_OR_RETURN(out.count, GetInt(source, g["count"], "count", 1, 100000));
  PHX_ASSIGN_OR_RETURN(out.gpu_model, GetString(source, g["gpuModel"], "gpuModel"));
  if (g["gpusPerNode"]) {
    PHX_ASSIGN_OR_RETURN(out.gpus_per_node, GetInt(source, g["gpusPerNode"], "gpusPerNode", 1, placement::kMaxGpusPerNode));
  }
  if (g["topology"]) { PHX_ASSIGN_OR_RETURN(out.topology, ParseTopology(source, g["topology"])); }
  if (g["nodesPerRack"]) { PHX_ASSIGN_OR_RETURN(out.nodes_per_rack, GetInt(source, g["nodesPerRack"], "nodesPerRack", 0, 100000)); }
  if (g["racksPerBlock"]) {
    PHX_ASSIGN_OR_RETURN(out.racks_per_block, GetInt(source, g["racksPerBlock"], "racksPerBlock", 0, 100000));
    if (out.racks_per_block > 0 && out.nodes_per_rack == 0)
      return At(source, g["racksPerBlock"], "racksPerBlock needs nodesPerRack");
  }
  if (g["nodesPerNvlinkDomain"]) {
    PHX_ASSIGN_OR_RETURN(out.nodes_per_nvlink_domain,
                         GetInt(source, g["nodesPerNvlinkDomain"], "nodesPerNvlinkDomain", 0, 100000));
  }
  if (g["zone"]) { PHX_ASSIGN_OR_RETURN(out.zone, GetString(source, g["zone"], "zone")); }
  if (out.topology == IntraNodeTopology::kNvlinkPairs && out.gpus_per_node % 2 != 0)
    return At(source, g, fmt::format("nodeGroups[{}]: nvlink-pairs needs an even gpusPerNode", index));
  return out;
}

topology::NodeTopology MakeMachine(const NodeGroup& g) {
  topology::MachineOptions opts;
  opts.uuid_seed = g.name;
  const bool h100 = g.gpu_model.find("H100") != std::string::npos;
  const uint64_t mem = h100 ? 81559 : 81920;
  switch (g.topology) {
    case IntraNodeTopology::kNvSwitch: return topology::MakeNvSwitchNode(g.gpus_per_node, g.gpu_model, mem, h100 ? 18 : 12, opts);
    case IntraNodeTopology::kNvlinkPairs: return topology::MakeNvlinkPairsNode(g.gpus_per_node, g.gpu_model, mem, 4, opts);
    case IntraNodeTopology::kPcie: return topology::MakePcieNode(g.gpus_per_node, g.gpu_model, mem, topology::LinkKind::kPhb, opts);
  }
  return topology::MakePcieNode(g.gpus_per_node, g.gpu_model, mem, topology::LinkKind::kPhb, opts);
}

}  // namespace

int ClusterSpec::TotalGpus() const {
  int n = 0;
  for (const auto& g : groups) n += g.count * g.gpus_per_node;
  return n;
}

int ClusterSpec::TotalNodes() const {
  int n = 0;
  for (const auto& g : groups) n += g.count;
  return n;
}

const std::vector<std::string>& SimLevels() {
  static const std::vector<std::string> kLevels = {"kubernetes.io/hostname", "phalanx.io/nvlink-domain",
                                                   "topology.kubernetes.io/rack", "phalanx.io/block",
                                                   "topology.kubernetes.io/zone"};
  return kLevels;
}

Result<ClusterSpec> ParseClusterSpec(const std::string& text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(fmt::format("{}:{}: invalid YAML: {}", source, e.mark.line + 1, e.msg));
  }
  if (!root.IsMap()) return InvalidArgumentError(fmt::format("{}: expected a mapping with nodeGroups", source));
  ClusterSpec spec;
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    if (key != "name" && key != "nodeGroups") return At(source, kv.first, fmt::format("unknown field \"{}\"", key));
  }
  if (root["name"]) { PHX_ASSIGN_OR_RETURN(spec.name, GetString(source, root["name"], "name")); }
  const YAML::Node groups = root["nodeGroups"];
  if (!groups || !groups.IsSequence() || groups.size() == 0)
    return InvalidArgumentError(fmt::format("{}: nodeGroups must be a non-empty list", source));
  std::set<std::string> names;
  for (size_t i = 0; i < groups.size(); ++i) {
    PHX_ASSIGN_OR_RETURN(NodeGroup g, ParseGroup(source, groups[i], static_cast<int>(i)));
    if (!names.insert(g.name).second)
      return At(source, groups[i], fmt::format("duplicate node group name \"{}\"", g.name));
    spec.groups.push_back(std::move(g));
  }
  return spec;
}

Result<ClusterSpec> LoadClusterSpec(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFoundError(fmt::format("cannot open cluster description {}", path));
  std::stringstream buf;
  buf << in.rdbuf();
  return ParseClusterSpec(buf.str(), path);
}

Result<placement::ClusterState> BuildClusterState(const ClusterSpec& spec) {
  placement::ClusterState state(SimLevels());
  for (const NodeGroup& g : spec.groups) {
    const topology::NodeTopology machine = MakeMachine(g);
    auto bw = std::make_shared<const placement::BandwidthMatrix>(placement::BandwidthFromTopology(machine));
    for (int i = 0; i < g.count; ++i) {
      placement::NodeSpec n;
      n.name = NodeName(fmt::format("{}-{}", g.name, i));
      n.pool = g.gpu_model;
      n.gpu_count = g.gpus_per_node;
      n.bandwidth = bw;
      n.healthy = placement::AllGpus(g.gpus_per_node);
      n.domains.assign(SimLevels().size(), "");
      n.domains[kLevelHost] = n.name.str();
      if (g.nodes_per_nvlink_domain > 0) n.domains[kLevelNvlinkDomain] = fmt::format("{}-nvl{}", g.name, i / g.nodes_per_nvlink_domain);
      if (g.nodes_per_rack > 0) {
        const int rack = i / g.nodes_per_rack;
        n.domains[kLevelRack] = fmt::format("{}-r{}", g.name, rack);
        if (g.racks_per_block > 0) n.domains[kLevelBlock] = fmt::format("{}-b{}", g.name, rack / g.racks_per_block);
      }
      n.domains[kLevelZone] = g.zone;
      auto added = state.AddNode(std::move(n));
      if (!added.ok()) return added.status();
    }
  }
  return state;
}

}  // namespace phalanx::sim
