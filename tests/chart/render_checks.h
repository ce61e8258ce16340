// What the chart's render checks share (render_test.cc, components_test.cc, rbac_test.cc,
// flags_docs_test.cc): the configurations every check runs over and small readers of the
// rendered objects.
#pragma once

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <map>
#include <string>
#include <vector>

#include "tests/chart/chart_env.h"
#include "tests/chart/rendering.h"

namespace phalanx::chart_test {

struct Config {
  const char* name;
  const Rendering& (*render)();
};
inline const Rendering& RenderDefault() { return Render(); }
// Default values have the webhook with its self-managed certificate, ci/nondefault-values.yaml
// with cert-manager; this one the helm-made certificate.
inline const Rendering& RenderWebhook() { return Render({"--set", "webhook.selfManaged.enabled=false"}); }
inline const std::vector<Config>& Configs() {
  static const std::vector<Config> configs = {{"default values", &RenderDefault},
                                              {"ci/nondefault-values.yaml", &RenderNonDefault},
                                              {"webhook.selfManaged.enabled=false", &RenderWebhook}};
  return configs;
}

inline std::vector<std::string> Seq(const YAML::Node& n) {
  std::vector<std::string> out;
  if (n.IsDefined() && n.IsSequence()) {
    for (const auto& v : n) out.push_back(v.as<std::string>());
  }
  return out;
}

inline std::map<std::string, std::string> StrMap(const YAML::Node& n) {
  std::map<std::string, std::string> out;
  if (n.IsDefined() && n.IsMap()) {
    for (const auto& kv : n) out[kv.first.as<std::string>()] = kv.second.as<std::string>();
  }
  return out;
}

inline bool IsSubset(const std::map<std::string, std::string>& sel, const std::map<std::string, std::string>& labels) {
  for (const auto& [k, v] : sel) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  return true;
}

// Flags of a container: "--name=value" / "--name" -> {name: value}.
inline std::map<std::string, std::string> Flags(const YAML::Node& container) {
  std::map<std::string, std::string> out;
  std::vector<std::string> words = Seq(At(container, {"command"}));
  for (auto& a : Seq(At(container, {"args"}))) words.push_back(a);
  for (const auto& w : words) {
    if (w.rfind("--", 0) != 0) continue;
    size_t eq = w.find('=');
    out[w.substr(2, eq == std::string::npos ? std::string::npos : eq - 2)] =
        eq == std::string::npos ? "" : w.substr(eq + 1);
  }
  return out;
}

inline YAML::Node Container(const YAML::Node& workload, const std::string& name) {
  for (const auto& c : At(workload, {"spec", "template", "spec", "containers"})) {
    if (Str(c, {"name"}) == name) return c;
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

inline std::string Full(const std::string& suffix) { return std::string(kRelease) + "-" + suffix; }

}  // namespace phalanx::chart_test
