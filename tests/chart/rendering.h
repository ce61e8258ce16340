// `helm template` of helm/phalanx parsed into YAML documents, cached per value set so each test
// process renders a configuration once.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

// In a test: stop with helm's error when the chart did not render.
#define ASSERT_RENDERED(r) ASSERT_TRUE((r).error.empty()) << (r).error

namespace phalanx::chart_test {

inline constexpr const char* kRelease = "phalanx";
inline constexpr const char* kNamespace = "phalanx-system";
inline constexpr const char* kKubeVersion = "1.32.0";

struct Rendering {
  std::string text;
  std::string error;  // non-empty: helm failed or the output is not YAML
  std::vector<YAML::Node> docs;

  std::vector<YAML::Node> OfKind(const std::string& kind) const;
  // The object of this kind and name, or an undefined node.
  YAML::Node Get(const std::string& kind, const std::string& name) const;
};

// Splits a multi-document YAML stream; empty documents are dropped. `error` gets the parser's
// message (with line) on malformed input.
std::vector<YAML::Node> ParseDocs(const std::string& text, std::string* error);

// helm template <kRelease> helm/phalanx -n <kNamespace> --kube-version <kKubeVersion> <extra...>
const Rendering& Render(const std::vector<std::string>& extra_args = {});
// The same with -f helm/phalanx/ci/nondefault-values.yaml.
const Rendering& RenderNonDefault();

// Small accessors on YAML: string at a path of map keys ("" if absent).
std::string Str(const YAML::Node& n, std::initializer_list<const char*> path);
YAML::Node At(const YAML::Node& n, std::initializer_list<const char*> path);

}  // namespace phalanx::chart_test
