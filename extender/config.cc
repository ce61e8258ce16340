#include "extender/config.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "core/scheduling/policy_yaml.h"

namespace phalanx::extender {
namespace {

const std::set<std::string, std::less<>> kKnownKeys = {
    "weights", "tiers", "topologyLevels", "headOfLineSeconds", "gangTimeoutSeconds",
    "httpTimeoutSeconds", "memberSettleMillis", "planTtlSeconds", "pdbOverrideAfterSeconds", "scheduling", "teamQueues"};

Result<double> Number(const YAML::Node& node, const std::string& key) {
  try {
    return node.as<double>();
  } catch (const YAML::Exception&) {
    return InvalidArgumentError(fmt::format("{}: expected a number", key));
  }
}

Result<int64_t> Integer(const YAML::Node& node, const std::string& key, int64_t min) {
  int64_t v = 0;
  try {
    v = node.as<int64_t>();
  } catch (const YAML::Exception&) {
    return InvalidArgumentError(fmt::format("{}: expected an integer", key));
  }
  if (v < min) return InvalidArgumentError(fmt::format("{}: must be >= {}, got {}", key, min, v));
  return v;
}

Result<std::string> String(const YAML::Node& node, const std::string& key) {
  if (!node.IsScalar()) return InvalidArgumentError(fmt::format("{}: expected a string", key));
  return node.as<std::string>();
}

Status Validate(ExtenderConfig& c) {
  if (c.tiers.empty()) return InvalidArgumentError("tiers: at least one tier is needed");
  std::stable_sort(c.tiers.begin(), c.tiers.end(),
                   [](const Tier& a, const Tier& b) { return a.min_priority > b.min_priority; });
  std::set<std::string, std::less<>> names;
  for (const Tier& t : c.tiers) {
    if (t.name.empty()) return InvalidArgumentError("tiers: a tier has no name");
    if (!names.insert(t.name).second) return InvalidArgumentError(fmt::format("tiers: duplicate tier \"{}\"", t.name));
  }
  for (size_t i = 0; i + 1 < c.tiers.size(); ++i) {
    if (c.tiers[i].min_priority == c.tiers[i + 1].min_priority) {
      return InvalidArgumentError(fmt::format("tiers: \"{}\" and \"{}\" have the same minPriority {}",
                                              c.tiers[i].name, c.tiers[i + 1].name, c.tiers[i].min_priority));
    }
  }
  for (size_t i = 0; i < c.tiers.size(); ++i) {
    for (const std::string& p : c.tiers[i].preempts) {
      auto it = std::find_if(c.tiers.begin(), c.tiers.end(), [&](const Tier& t) { return t.name == p; });
      if (it == c.tiers.end()) {
        return InvalidArgumentError(fmt::format("tiers[{}].preempts: unknown tier \"{}\"", c.tiers[i].name, p));
      }
      if (static_cast<size_t>(it - c.tiers.begin()) <= i) {
        return InvalidArgumentError(
            fmt::format("tiers[{}].preempts: \"{}\" is not a lower tier", c.tiers[i].name, p));
      }
    }
  }
  if (c.topology_levels.empty() || c.topology_levels.front() != "kubernetes.io/hostname") {
    return InvalidArgumentError("topologyLevels: the first (narrowest) level must be kubernetes.io/hostname");
  }
  std::set<std::string> levels(c.topology_levels.begin(), c.topology_levels.end());
  if (levels.size() != c.topology_levels.size()) return InvalidArgumentError("topologyLevels: duplicate level");
  if (c.weights.topology < 0 || c.weights.packing < 0 || c.weights.locality < 0 ||
      c.weights.topology + c.weights.packing + c.weights.locality <= 0) {
    return InvalidArgumentError("weights: must be >= 0 and not all 0");
  }
  if (c.http_timeout <= std::chrono::seconds(10)) {
    return InvalidArgumentError(fmt::format(
        "httpTimeoutSeconds: must be > 10 (bind barriers end 10 s before the scheduler gives up), got {}",
        c.http_timeout.count()));
  }
  return OkStatus();
}

}  // namespace

int ExtenderConfig::TierOf(int priority) const {
  for (size_t i = 0; i < tiers.size(); ++i) {
    if (priority >= tiers[i].min_priority) return static_cast<int>(i);
  }
  return static_cast<int>(tiers.size()) - 1;
}

bool ExtenderConfig::MayPreempt(int preemptor_priority, int victim_priority) const {
  if (victim_priority >= preemptor_priority) return false;
  const Tier& p = tiers[static_cast<size_t>(TierOf(preemptor_priority))];
  const std::string& v = tiers[static_cast<size_t>(TierOf(victim_priority))].name;
  return std::find(p.preempts.begin(), p.preempts.end(), v) != p.preempts.end();
}

std::chrono::seconds ExtenderConfig::BarrierTimeout(std::chrono::seconds gang) const {
  return std::max(std::chrono::seconds(1), std::min(gang, http_timeout - std::chrono::seconds(10)));
}

std::chrono::seconds ExtenderConfig::WriteRequestTimeout() const {
  return std::clamp(http_timeout / 3, std::chrono::seconds(1), std::chrono::seconds(10));
}

ExtenderConfig DefaultConfig() {
  ExtenderConfig c;
  c.tiers = {{"critical", 1000000, {"high", "standard", "spot"}},
             {"high", 10000, {"standard", "spot"}},
             {"standard", 1000, {"spot"}},
             {"spot", INT32_MIN, {}}};
  c.topology_levels = {"kubernetes.io/hostname", "phalanx.io/nvlink-domain", "topology.kubernetes.io/rack",
                       "phalanx.io/block", "topology.kubernetes.io/zone"};
  return c;
}

namespace {

Result<ExtenderConfig> ParseConfigUnguarded(std::string_view text) {
  ExtenderConfig c = DefaultConfig();
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(fmt::format("config: line {}: {}", e.mark.line + 1, e.msg));
  }
  if (root.IsNull()) {
    PHX_RETURN_IF_ERROR(Validate(c));
    return c;
  }
  if (!root.IsMap()) return InvalidArgumentError("config: expected a mapping at the top level");
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    if (!kKnownKeys.contains(key)) return InvalidArgumentError(fmt::format("{}: unknown key", key));
  }
  if (const YAML::Node w = root["weights"]) {
    if (!w.IsMap()) return InvalidArgumentError("weights: expected a mapping");
    for (const auto& kv : w) {
      const std::string k = kv.first.as<std::string>();
      PHX_ASSIGN_OR_RETURN(double v, Number(kv.second, "weights." + k));
      if (k == "topology") c.weights.topology = v;
      else if (k == "packing") c.weights.packing = v;
      else if (k == "locality") c.weights.locality = v;
      else return InvalidArgumentError(fmt::format("weights.{}: unknown weight (topology, packing, locality)", k));
    }
  }
  if (const YAML::Node tiers = root["tiers"]) {
    if (!tiers.IsSequence()) return InvalidArgumentError("tiers: expected a list");
    c.tiers.clear();
    for (size_t i = 0; i < tiers.size(); ++i) {
      const YAML::Node t = tiers[i];
      const std::string at = fmt::format("tiers[{}]", i);
      if (!t.IsMap()) return InvalidArgumentError(at + ": expected a mapping");
      Tier tier;
      if (!t["name"]) return InvalidArgumentError(at + ".name: missing");
      PHX_ASSIGN_OR_RETURN(tier.name, String(t["name"], at + ".name"));
      if (!t["minPriority"]) return InvalidArgumentError(at + ".minPriority: missing");
      PHX_ASSIGN_OR_RETURN(int64_t mp, Integer(t["minPriority"], at + ".minPriority", INT32_MIN));
      tier.min_priority = static_cast<int>(std::min<int64_t>(mp, INT32_MAX));
      if (const YAML::Node p = t["preempts"]) {
        if (!p.IsSequence()) return InvalidArgumentError(at + ".preempts: expected a list");
        for (size_t j = 0; j < p.size(); ++j) {
          PHX_ASSIGN_OR_RETURN(std::string name, String(p[j], fmt::format("{}.preempts[{}]", at, j)));
          tier.preempts.push_back(std::move(name));
        }
      }
      c.tiers.push_back(std::move(tier));
    }
  }
  if (const YAML::Node levels = root["topologyLevels"]) {
    if (!levels.IsSequence()) return InvalidArgumentError("topologyLevels: expected a list");
    c.topology_levels.clear();
    for (size_t i = 0; i < levels.size(); ++i) {
      PHX_ASSIGN_OR_RETURN(std::string level, String(levels[i], fmt::format("topologyLevels[{}]", i)));
      c.topology_levels.push_back(std::move(level));
    }
  }
  auto seconds = [&](const char* key, std::chrono::seconds& out, int64_t min) -> Status {
    if (const YAML::Node n = root[key]) {
      PHX_ASSIGN_OR_RETURN(int64_t v, Integer(n, key, min));
      out = std::chrono::seconds(v);
    }
    return OkStatus();
  };
  PHX_RETURN_IF_ERROR(seconds("headOfLineSeconds", c.head_of_line, 0));
  PHX_RETURN_IF_ERROR(seconds("gangTimeoutSeconds", c.gang_timeout, 1));
  PHX_RETURN_IF_ERROR(seconds("httpTimeoutSeconds", c.http_timeout, 1));
  PHX_RETURN_IF_ERROR(seconds("planTtlSeconds", c.plan_ttl, 1));
  PHX_RETURN_IF_ERROR(seconds("pdbOverrideAfterSeconds", c.pdb_override_after, 1));
  if (c.pdb_override_after > std::chrono::hours(24)) {
    return InvalidArgumentError("pdbOverrideAfterSeconds: at most 86400 (a day), got " +
                                std::to_string(c.pdb_override_after.count()));
  }
  if (const YAML::Node n = root["memberSettleMillis"]) {
    PHX_ASSIGN_OR_RETURN(int64_t v, Integer(n, "memberSettleMillis", 0));
    c.member_settle = std::chrono::milliseconds(v);
  }
  if (const YAML::Node n = root["scheduling"]) {
    PHX_ASSIGN_OR_RETURN(c.scheduling, scheduling::ParseEnginePolicy(n, "scheduling"));
  }
  if (const YAML::Node n = root["teamQueues"]) {
    if (!n.IsMap()) return InvalidArgumentError("teamQueues: expected a mapping");
    for (const auto& kv : n) {
      const std::string key = kv.first.as<std::string>();
      if (key != "crossQueuePreemptionPriority" && key != "reclaimAfterSeconds") {
        return InvalidArgumentError(fmt::format(
            "teamQueues.{}: unknown key (known: crossQueuePreemptionPriority, reclaimAfterSeconds; the queues "
            "themselves are GpuQueue objects)",
            key));
      }
    }
    if (const YAML::Node p = n["crossQueuePreemptionPriority"]) {
      PHX_ASSIGN_OR_RETURN(int64_t v, Integer(p, "teamQueues.crossQueuePreemptionPriority", -1));
      if (v > 2'000'000'000) return InvalidArgumentError("teamQueues.crossQueuePreemptionPriority: must be <= 2000000000");
      c.team_queues.cross_queue_preemption_priority = static_cast<int>(v);
    }
    if (const YAML::Node r = n["reclaimAfterSeconds"]) {
      PHX_ASSIGN_OR_RETURN(double v, Number(r, "teamQueues.reclaimAfterSeconds"));
      if (!(v >= 0) || !std::isfinite(v)) return InvalidArgumentError("teamQueues.reclaimAfterSeconds: must be >= 0");
      c.team_queues.reclaim_after_s = v;
    }
  }
  PHX_RETURN_IF_ERROR(Validate(c));
  return c;
}

}  // namespace

Result<ExtenderConfig> ParseConfig(std::string_view text) {
  // yaml-cpp throws from conversions the decoder does not guard one by one (a mapping as a key:
  // `{a: 1}: 2`); bad input is an error, never an exception out of the parser.
  try {
    return ParseConfigUnguarded(text);
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(fmt::format("config: line {}: {}", e.mark.line + 1, e.msg));
  }
}

Result<ExtenderConfig> LoadConfigFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFoundError(fmt::format("--config {}: cannot open", path));
  std::stringstream ss;
  ss << in.rdbuf();
  auto parsed = ParseConfig(ss.str());
  if (!parsed.ok()) return InvalidArgumentError(fmt::format("--config {}: {}", path, parsed.status().message()));
  return parsed;
}

}  // namespace phalanx::extender
