// Strict reading of the scheduling YAML (tier policy, queues): an unknown key or a value of
// the wrong type is an InvalidArgument naming the field ("tiers[2].weight: expected a number"),
// so a typo is refused at start rather than silently ignored.
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <type_traits>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "core/base/status.h"

namespace phalanx::scheduling::strict_yaml {

using Keys = std::set<std::string, std::less<>>;

// `node` is a mapping whose keys are all in `known`.
inline Status CheckKeys(const YAML::Node& node, const Keys& known, std::string_view where) {
  if (!node.IsMap()) return InvalidArgumentError(fmt::format("{}: expected a mapping", where));
  for (const auto& kv : node) {
    // A mapping or list as a key (`{a: 1}: 2`) would throw from as<std::string>().
    if (!kv.first.IsScalar()) return InvalidArgumentError(fmt::format("{}: a key must be a plain string", where));
    const std::string key = kv.first.as<std::string>();
    if (!known.contains(key)) {
      std::string list;
      for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
      return InvalidArgumentError(fmt::format("{}.{}: unknown key (known: {})", where, key, list));
    }
  }
  return OkStatus();
}

// node[key] into *out when present (absent: *out unchanged); a scalar of type T or an error.
template <typename T>
Status Read(const YAML::Node& node, std::string_view key, std::string_view where, T* out) {
  const YAML::Node v = node[std::string(key)];
  if (!v) return OkStatus();
  try {
    if (!v.IsScalar()) throw YAML::Exception(YAML::Mark::null_mark(), "");
    *out = v.as<T>();
  } catch (const YAML::Exception&) {
    const char* kind = std::is_same_v<T, bool>          ? "true or false"
                       : std::is_same_v<T, std::string> ? "a string"
                       : std::is_integral_v<T>          ? "an integer"
                                                        : "a number";
    return InvalidArgumentError(fmt::format("{}.{}: expected {}", where, key, kind));
  }
  return OkStatus();
}

}  // namespace phalanx::scheduling::strict_yaml
