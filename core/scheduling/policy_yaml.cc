#include "core/scheduling/policy_yaml.h"

#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "core/scheduling/strict_yaml.h"

namespace phalanx::scheduling {
namespace {

using strict_yaml::CheckKeys;
using strict_yaml::Keys;
using strict_yaml::Read;

Status ReadTier(const YAML::Node& node, std::string_view where, TierPolicy* t) {
  static const Keys kTierKeys = {"name", "priority", "weight", "targetWaitSeconds", "minRunSeconds",
                                 "maxPreemptionsPerDay", "reserveAfterSeconds", "defaultDurationSeconds",
                                 "preemptibleBackfill", "idleVictimsFirst"};
  PHX_RETURN_IF_ERROR(CheckKeys(node, kTierKeys, where));
  PHX_RETURN_IF_ERROR(Read(node, "priority", where, &t->priority));
  PHX_RETURN_IF_ERROR(Read(node, "weight", where, &t->weight));
  PHX_RETURN_IF_ERROR(Read(node, "targetWaitSeconds", where, &t->target_wait_s));
  PHX_RETURN_IF_ERROR(Read(node, "minRunSeconds", where, &t->min_run_s));
  PHX_RETURN_IF_ERROR(Read(node, "maxPreemptionsPerDay", where, &t->max_preemptions_per_day));
  PHX_RETURN_IF_ERROR(Read(node, "reserveAfterSeconds", where, &t->reserve_after_s));
  PHX_RETURN_IF_ERROR(Read(node, "defaultDurationSeconds", where, &t->default_duration_s));
  PHX_RETURN_IF_ERROR(Read(node, "preemptibleBackfill", where, &t->preemptible_backfill));
  PHX_RETURN_IF_ERROR(Read(node, "idleVictimsFirst", where, &t->idle_victims_first));
  return OkStatus();
}

}  // namespace

Result<EnginePolicy> ParseEnginePolicy(const YAML::Node& node, std::string_view where) {
  static const Keys kKeys = {"backfill", "restartOverheadSeconds", "waitHorizonSeconds", "preemptionSearchesPerPass",
                             "calibrateDurations", "tiers"};
  EnginePolicy p = EnginePolicy::Defaults();
  if (!node || node.IsNull()) return p;
  PHX_RETURN_IF_ERROR(CheckKeys(node, kKeys, where));
  PHX_RETURN_IF_ERROR(Read(node, "backfill", where, &p.backfill));
  PHX_RETURN_IF_ERROR(Read(node, "restartOverheadSeconds", where, &p.restart_overhead_s));
  PHX_RETURN_IF_ERROR(Read(node, "waitHorizonSeconds", where, &p.wait_horizon_s));
  PHX_RETURN_IF_ERROR(Read(node, "preemptionSearchesPerPass", where, &p.preemption_searches_per_pass));
  PHX_RETURN_IF_ERROR(Read(node, "calibrateDurations", where, &p.calibrate_durations));
  if (const YAML::Node tiers = node["tiers"]) {
    if (!tiers.IsSequence() || tiers.size() == 0) {
      return InvalidArgumentError(fmt::format("{}.tiers: expected a non-empty list", where));
    }
    const EnginePolicy defaults = EnginePolicy::Defaults();
    std::vector<TierPolicy> list;
    for (size_t i = 0; i < tiers.size(); ++i) {
      const std::string at = fmt::format("{}.tiers[{}]", where, i);
      std::string name;
      if (tiers[i].IsMap()) PHX_RETURN_IF_ERROR(Read(tiers[i], "name", at, &name));
      if (name.empty()) return InvalidArgumentError(fmt::format("{}.name: required", at));
      TierPolicy t = defaults.TierOf(1000);  // the standard tier's values
      for (const TierPolicy& d : defaults.tiers)
        if (d.name == name) t = d;
      t.name = name;
      PHX_RETURN_IF_ERROR(ReadTier(tiers[i], at, &t));
      list.push_back(std::move(t));
    }
    p.tiers = std::move(list);
  }
  Status valid = p.Validate();
  if (!valid.ok()) return InvalidArgumentError(fmt::format("{}.{}", where, valid.message()));
  return p;
}

Result<EnginePolicy> LoadEnginePolicyFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError(fmt::format("{}: cannot open", path));
  std::stringstream text;
  text << in.rdbuf();
  YAML::Node root;
  try {
    root = YAML::Load(text.str());
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(fmt::format("{}:{}: {}", path, e.mark.line + 1, e.msg));
  }
  const YAML::Node node = root.IsMap() && root["scheduling"] ? root["scheduling"] : root;
  auto policy = ParseEnginePolicy(node, "scheduling");
  if (!policy.ok()) return InvalidArgumentError(fmt::format("{}: {}", path, policy.status().message()));
  return policy;
}

}  // namespace phalanx::scheduling
