#include "tests/chart/rendering.h"

#include <map>
#include <mutex>

#include "tests/chart/chart_env.h"

namespace phalanx::chart_test {

std::vector<YAML::Node> Rendering::OfKind(const std::string& kind) const {
  std::vector<YAML::Node> out;
  for (const auto& d : docs) {
    if (Str(d, {"kind"}) == kind) out.push_back(d);
  }
  return out;
}

YAML::Node Rendering::Get(const std::string& kind, const std::string& name) const {
  for (const auto& d : docs) {
    if (Str(d, {"kind"}) == kind && Str(d, {"metadata", "name"}) == name) return d;
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

std::vector<YAML::Node> ParseDocs(const std::string& text, std::string* error) {
  std::vector<YAML::Node> out;
  try {
    for (auto& d : YAML::LoadAll(text)) {
      if (d.IsDefined() && !d.IsNull()) out.push_back(d);
    }
  } catch (const YAML::Exception& e) {
    if (error != nullptr) *error = e.what();
    out.clear();
  }
  return out;
}

const Rendering& Render(const std::vector<std::string>& extra_args) {
  static std::mutex mu;
  static std::map<std::vector<std::string>, Rendering> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(extra_args);
  if (it != cache.end()) return it->second;
  Rendering& r = cache[extra_args];
  const HelmLocation& helm = Helm();
  if (!helm.error.empty()) {
    r.error = helm.error;
    return r;
  }
  std::vector<std::string> argv = {helm.path, "template", kRelease, SourceDir() + "/helm/phalanx",
                                   "--namespace", kNamespace, "--kube-version", kKubeVersion};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  CommandResult res = RunCommand(argv);
  if (res.exit_code != 0) {
    r.error = "helm template failed (exit " + std::to_string(res.exit_code) + "): " + res.err;
    return r;
  }
  r.text = res.out;
  std::string parse_error;
  r.docs = ParseDocs(r.text, &parse_error);
  if (!parse_error.empty()) r.error = "rendered output is not YAML: " + parse_error;
  return r;
}

const Rendering& RenderNonDefault() {
  return Render({"-f", SourceDir() + "/helm/phalanx/ci/nondefault-values.yaml"});
}

YAML::Node At(const YAML::Node& n, std::initializer_list<const char*> path) {
  // const operator[] never inserts, and reset() rebinds without writing through (yaml-cpp's
  // operator= on a bound node would overwrite the tree).
  YAML::Node cur;
  cur.reset(n);
  for (const char* key : path) {
    const YAML::Node& c = cur;
    if (!c.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
    YAML::Node next = c[key];
    if (!next.IsDefined()) return YAML::Node(YAML::NodeType::Undefined);
    cur.reset(next);
  }
  return cur;
}

std::string Str(const YAML::Node& n, std::initializer_list<const char*> path) {
  YAML::Node v = At(n, path);
  return v.IsDefined() && v.IsScalar() ? v.Scalar() : std::string();
}

}  // namespace phalanx::chart_test
