#include "sim/cluster/cluster_spec.h"

#include <algorithm>
#include <bit>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "core/placement/topology_bandwidth.h"
#include "core/topology/mig_layout.h"
#include "core/topology/reference_machines.h"
#include "sim/cluster/snapshot_cluster.h"

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

// mig: [{gpus: 2, layout: [3g.40gb, 2g.20gb, 1g.10gb, 1g.10gb]}, ...]. Each layout is
// checked against the GPU model's MIG profile table (core/topology/mig_layout.h): known
// profiles, at most 7 compute slices, a valid placement.
Result<std::vector<MigGroupLayout>> ParseMig(const std::string& source, const YAML::Node& node, const NodeGroup& group,
                                             int index) {
  if (!node.IsSequence()) return At(source, node, fmt::format("nodeGroups[{}].mig must be a list", index));
  std::vector<MigGroupLayout> out;
  int used = 0;
  for (size_t k = 0; k < node.size(); ++k) {
    const YAML::Node m = node[k];
    const std::string where = fmt::format("nodeGroups[{}].mig[{}]", index, k);
    if (!m.IsMap()) return At(source, m, where + " must be a mapping with gpus and layout");
    for (const auto& kv : m) {
      const std::string key = kv.first.as<std::string>();
      if (key != "gpus" && key != "layout") return At(source, kv.first, fmt::format("{}: unknown field \"{}\"", where, key));
    }
    MigGroupLayout layout;
    layout.line = static_cast<int>(m.Mark().line) + 1;
    if (!m["gpus"]) return At(source, m, where + ": missing field \"gpus\"");
    if (!m["layout"] || !m["layout"].IsSequence() || m["layout"].size() == 0)
      return At(source, m, where + ": layout must be a non-empty list of MIG profiles");
    PHX_ASSIGN_OR_RETURN(layout.gpus, GetInt(source, m["gpus"], where + ".gpus", 1, placement::kMaxGpusPerNode));
    for (const auto& p : m["layout"]) {
      PHX_ASSIGN_OR_RETURN(std::string profile, GetString(source, p, where + ".layout[]"));
      layout.profiles.push_back(std::move(profile));
    }
    topology::Gpu probe;
    probe.product = group.gpu_model;
    if (Status st = topology::ApplyMigLayout(probe, layout.profiles); !st.ok())
      return At(source, m["layout"], fmt::format("{}: {}", where, st.message()));
    used += layout.gpus;
    if (used > group.gpus_per_node)
      return At(source, m, fmt::format("{}: MIG layouts cover {} GPUs, more than gpusPerNode {}", where, used,
                                       group.gpus_per_node));
    out.push_back(std::move(layout));
  }
  return out;
}

Result<NodeGroup> ParseGroup(const std::string& source, const YAML::Node& g, int index) {
  if (!g.IsMap()) return At(source, g, fmt::format("nodeGroups[{}] must be a mapping", index));
  NodeGroup out;
  out.line = static_cast<int>(g.Mark().line) + 1;
  static const std::set<std::string> kKnown = {"name",         "count",        "gpuModel",      "gpusPerNode",
                                               "topology",     "nodesPerRack", "racksPerBlock", "nodesPerNvlinkDomain",
                                               "zone",         "mig"};
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
  if (g["mig"]) { PHX_ASSIGN_OR_RETURN(out.mig, ParseMig(source, g["mig"], out, index)); }
  return out;
}

topology::NodeTopology MakeWholeMachine(const NodeGroup& g) {
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

// The machine with its MIG layouts applied (validated at parse time).
Result<topology::NodeTopology> MakeMachine(const NodeGroup& g) {
  topology::NodeTopology machine = MakeWholeMachine(g);
  int gpu = 0;
  for (const MigGroupLayout& layout : g.mig) {
    for (int k = 0; k < layout.gpus; ++k, ++gpu) {
      if (Status st = topology::ApplyMigLayout(machine.gpus[static_cast<size_t>(gpu)], layout.profiles); !st.ok())
        return InvalidArgumentError(fmt::format("node group {}: {}", g.name, st.message()));
    }
  }
  return machine;
}

}  // namespace

int NodeGroup::MigGpus() const {
  int n = 0;
  for (const auto& m : mig) n += m.gpus;
  return n;
}

int ClusterSpec::MigGpus() const {
  int n = 0;
  if (snapshot) {
    for (placement::NodeIndex i : snapshot->state.Nodes()) n += std::popcount(snapshot->state.node(i).spec.mig);
    return n;
  }
  for (const auto& g : groups) n += g.count * g.MigGpus();
  return n;
}

int ClusterSpec::TotalGpus() const {
  int n = 0;
  if (snapshot) {
    for (placement::NodeIndex i : snapshot->state.Nodes()) n += snapshot->state.node(i).spec.gpu_count;
    return n;
  }
  for (const auto& g : groups) n += g.count * g.gpus_per_node;
  return n;
}

int ClusterSpec::TotalNodes() const {
  if (snapshot) return snapshot->state.NodeCount();
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

namespace {

Result<ClusterSpec> ParseClusterSpecUnguarded(const std::string& text, const std::string& source) {
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
    const auto& queue_keys = scheduling::QueueConfigKeys();
    if (key != "name" && key != "nodeGroups" && std::find(queue_keys.begin(), queue_keys.end(), key) == queue_keys.end()) {
      return At(source, kv.first, fmt::format("unknown field \"{}\"", key));
    }
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
  if (root["queues"]) {
    auto queues = scheduling::ParseQueueConfigFrom(root);
    if (!queues.ok()) return InvalidArgumentError(fmt::format("{}: {}", source, queues.status().message()));
    spec.queues = std::move(*queues);
    // A quota in a pool the cluster does not have is a typo, not an intent.
    for (size_t i = 0; i < spec.queues.queues.size(); ++i) {
      const scheduling::QueueSpec& q = spec.queues.queues[i];
      for (size_t j = 0; j < q.quotas.size(); ++j) {
        const bool known = std::any_of(spec.groups.begin(), spec.groups.end(),
                                       [&](const NodeGroup& g) { return g.gpu_model == q.quotas[j].pool; });
        if (!known) {
          return InvalidArgumentError(fmt::format("{}: queues[{}].quotas[{}].pool: no node group has gpuModel \"{}\"",
                                                  source, i, j, q.quotas[j].pool));
        }
      }
    }
  } else {
    for (const std::string& key : scheduling::QueueConfigKeys())
      if (root[key]) return InvalidArgumentError(fmt::format("{}: {} needs queues", source, key));
  }
  return spec;
}

}  // namespace

Result<ClusterSpec> ParseClusterSpec(const std::string& text, const std::string& source) {
  // yaml-cpp throws from conversions the decoder does not guard one by one (a mapping as a key:
  // `{a: 1}: 2`); bad input is an error, never an exception out of the parser.
  try {
    return ParseClusterSpecUnguarded(text, source);
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(fmt::format("{}:{}: {}", source, e.mark.line + 1, e.msg));
  }
}

Result<ClusterSpec> LoadClusterSpec(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFoundError(fmt::format("cannot open cluster description {}", path));
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string text = buf.str();
  if (LooksLikeSnapshot(text)) {
    PHX_ASSIGN_OR_RETURN(SimCluster cluster, BuildSimClusterFromSnapshot(text, path));
    ClusterSpec spec;
    spec.name = fmt::format("snapshot {}", path);
    spec.snapshot = std::make_shared<const SimCluster>(std::move(cluster));
    return spec;
  }
  return ParseClusterSpec(text, path);
}

Result<SimCluster> BuildSimCluster(const ClusterSpec& spec) {
  if (spec.snapshot) return SimCluster(*spec.snapshot);
  SimCluster out{placement::ClusterState(SimLevels()), {}, 0};
  placement::ClusterState& state = out.state;
  for (const NodeGroup& g : spec.groups) {
    PHX_ASSIGN_OR_RETURN(const topology::NodeTopology machine, MakeMachine(g));
    auto bw = std::make_shared<const placement::BandwidthMatrix>(placement::BandwidthFromTopology(machine));
    const placement::GpuMask mig_gpus = placement::MigGpuMask(machine);
    const std::vector<placement::MigSlice> mig_slices = placement::MigSlicesFromTopology(machine);
    for (int i = 0; i < g.count; ++i) {
      placement::NodeSpec n;
      n.name = NodeName(fmt::format("{}-{}", g.name, i));
      n.pool = g.gpu_model;
      n.gpu_count = g.gpus_per_node;
      n.bandwidth = bw;
      n.healthy = placement::AllGpus(g.gpus_per_node);
      n.mig = mig_gpus;
      n.domains.assign(SimLevels().size(), "");
      n.domains[kLevelHost] = n.name.str();
      if (g.nodes_per_nvlink_domain > 0) n.domains[kLevelNvlinkDomain] = fmt::format("{}-nvl{}", g.name, i / g.nodes_per_nvlink_domain);
      if (g.nodes_per_rack > 0) {
        const int rack = i / g.nodes_per_rack;
        n.domains[kLevelRack] = fmt::format("{}-r{}", g.name, rack);
        if (g.racks_per_block > 0) n.domains[kLevelBlock] = fmt::format("{}-b{}", g.name, rack / g.racks_per_block);
      }
      n.domains[kLevelZone] = g.zone;
      if (!mig_slices.empty()) out.mig.SetNode(n.name, mig_slices);
      out.node_groups.emplace(n.name, g.name);
      auto added = state.AddNode(std::move(n));
      if (!added.ok()) return added.status();
    }
  }
  return out;
}

Result<placement::ClusterState> BuildClusterState(const ClusterSpec& spec) {
  PHX_ASSIGN_OR_RETURN(SimCluster cluster, BuildSimCluster(spec));
  return std::move(cluster.state);
}

}  // namespace phalanx::sim
