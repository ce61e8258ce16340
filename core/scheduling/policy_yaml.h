// The `scheduling:` document: tier rules of the scheduling engine as YAML, shared by the
// simulator (`phalanx simulate --scheduling-policy FILE`) and, as a section of its
// --config, the extender. Format and defaults in docs/algorithms.md ("Configuration").
// Strict: an unknown key, a wrong type or an out-of-range value is an InvalidArgument
// naming the key (e.g. "scheduling.tiers[1].weight: must be > 0"); nothing is half-applied.
#pragma once

#include <string>
#include <string_view>

#include <yaml-cpp/yaml.h>

#include "core/base/result.h"
#include "core/scheduling/tier_policy.h"

namespace phalanx::scheduling {

// `node` is the mapping under `scheduling:`. Keys absent keep the defaults; a tier
// listed under the name of a default tier starts from that tier's values, a new name
// from the standard tier's; `tiers`, when given, is the complete list.
Result<EnginePolicy> ParseEnginePolicy(const YAML::Node& node, std::string_view where = "scheduling");
// A file holding `scheduling:` at its top level, or the mapping itself.
Result<EnginePolicy> LoadEnginePolicyFile(const std::string& path);

}  // namespace phalanx::scheduling
