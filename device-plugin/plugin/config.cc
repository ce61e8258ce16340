#include "device-plugin/plugin/config.h"

#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

namespace phalanx::device_plugin {
namespace {

std::string Join(std::string_view path, std::string_view key) {
  return path.empty() ? std::string(key) : fmt::format("{}.{}", path, key);
}

Status Bad(std::string_view path, std::string_view what) {
  return InvalidArgumentError(fmt::format("{}: {}", path, what));
}

// Every key of `node` must be in `known`.
Status CheckKeys(const YAML::Node& node, std::string_view path,
                 std::initializer_list<std::string_view> known) {
  if (!node.IsMap()) return Bad(path.empty() ? "<root>" : path, "expected a mapping");
  for (const auto& kv : node) {
    const std::string key = kv.first.as<std::string>();
    bool ok = false;
    for (auto k : known) ok = ok || k == key;
    if (!ok) {
      std::string list;
      for (auto k : known) list += (list.empty() ? "" : ", ") + std::string(k);
      return Bad(Join(path, key), fmt::format("unknown key (known: {})", list));
    }
  }
  return OkStatus();
}

Result<bool> GetBool(const YAML::Node& n, std::string_view path) {
  bool v = false;
  if (!n.IsScalar() || !YAML::convert<bool>::decode(n, v)) return Bad(path, "expected true or false");
  return v;
}

Result<long long> GetInt(const YAML::Node& n, std::string_view path) {
  long long v = 0;
  if (!n.IsScalar() || !YAML::convert<long long>::decode(n, v)) return Bad(path, "expected an integer");
  return v;
}

Result<std::string> GetString(const YAML::Node& n, std::string_view path) {
  if (!n.IsScalar()) return Bad(path, "expected a string");
  return n.Scalar();
}

Result<DeviceListStrategy> ParseListStrategy(std::string_view s, std::string_view path) {
  if (s == "envvar") return DeviceListStrategy::kEnvvar;
  if (s == "volume-mounts") return DeviceListStrategy::kVolumeMounts;
  if (s == "cdi-annotations") return DeviceListStrategy::kCdiAnnotations;
  if (s == "cdi-cri") return DeviceListStrategy::kCdiCri;
  return Bad(path, fmt::format(
      "must be envvar, volume-mounts, cdi-annotations or cdi-cri, got \"{}\"", s));
}

bool IsGpuResourceName(std::string_view name) {
  return name == "nvidia.com/gpu" || name.rfind("nvidia.com/mig-", 0) == 0;
}

Status ParseFlags(const YAML::Node& flags, Config& c) {
  PHX_RETURN_IF_ERROR(CheckKeys(flags, "flags",
                                {"migStrategy", "failOnInitError", "plugin", "gfd", "nvidiaDriverRoot",
                                 "mpsRoot", "gdsEnabled", "mofedEnabled", "useNodeFeatureAPI",
                                 "deviceDiscoveryStrategy"}));
  if (auto n = flags["migStrategy"]) {
    PHX_ASSIGN_OR_RETURN(std::string s, GetString(n, "flags.migStrategy"));
    auto m = ParseMigStrategy(s);
    if (!m.ok()) return Bad("flags.migStrategy", m.status().message());
    c.mig_strategy = *m;
  }
  if (auto n = flags["failOnInitError"]) {
    PHX_ASSIGN_OR_RETURN(c.fail_on_init_error, GetBool(n, "flags.failOnInitError"));
  }
  if (auto p = flags["plugin"]) {
    PHX_RETURN_IF_ERROR(CheckKeys(p, "flags.plugin",
                                  {"passDeviceSpecs", "deviceListStrategy", "deviceIDStrategy",
                                   "containerDriverRoot", "cdiAnnotationPrefix",
                                   "nvidiaCTKPath", "nvidiaDevRoot"}));
    if (auto n = p["passDeviceSpecs"]) {
      PHX_ASSIGN_OR_RETURN(c.pass_device_specs, GetBool(n, "flags.plugin.passDeviceSpecs"));
    }
    if (auto n = p["deviceListStrategy"]) {
      const std::string path = "flags.plugin.deviceListStrategy";
      c.device_list_strategies.clear();
      if (n.IsScalar()) {
        PHX_ASSIGN_OR_RETURN(auto s, ParseListStrategy(n.Scalar(), path));
        c.device_list_strategies.push_back(s);
      } else if (n.IsSequence()) {
        for (size_t i = 0; i < n.size(); ++i) {
          const std::string ip = fmt::format("{}[{}]", path, i);
          PHX_ASSIGN_OR_RETURN(std::string name, GetString(n[i], ip));
          PHX_ASSIGN_OR_RETURN(auto s, ParseListStrategy(name, ip));
          c.device_list_strategies.push_back(s);
        }
      } else {
        return Bad(path, "expected a string or a list of strings");
      }
      if (c.device_list_strategies.empty()) return Bad(path, "must name at least one strategy");
    }
    if (auto n = p["deviceIDStrategy"]) {
      PHX_ASSIGN_OR_RETURN(std::string s, GetString(n, "flags.plugin.deviceIDStrategy"));
      if (s != "uuid") {
        return Bad("flags.plugin.deviceIDStrategy",
                   fmt::format("only \"uuid\" is supported (phalanx.io/devices names devices by "
                               "UUID), got \"{}\"", s));
      }
    }
  }
  return OkStatus();
}

Status ParseSharing(const YAML::Node& sharing, Config& c) {
  PHX_RETURN_IF_ERROR(CheckKeys(sharing, "sharing", {"timeSlicing", "mps"}));
  if (sharing["mps"]) return Bad("sharing.mps", "MPS sharing is not supported by Phalanx");
  auto ts = sharing["timeSlicing"];
  if (!ts) return OkStatus();
  const std::string tp = "sharing.timeSlicing";
  PHX_RETURN_IF_ERROR(CheckKeys(ts, tp, {"renameByDefault", "failRequestsGreaterThanOne", "resources"}));
  if (auto n = ts["renameByDefault"]) {
    PHX_ASSIGN_OR_RETURN(c.rename_by_default, GetBool(n, tp + ".renameByDefault"));
  }
  if (auto n = ts["failRequestsGreaterThanOne"]) {
    PHX_ASSIGN_OR_RETURN(c.fail_requests_greater_than_one,
                         GetBool(n, tp + ".failRequestsGreaterThanOne"));
  }
  auto res = ts["resources"];
  if (!res) return OkStatus();
  if (!res.IsSequence()) return Bad(tp + ".resources", "expected a list");
  std::set<std::string> names;
  for (size_t i = 0; i < res.size(); ++i) {
    const std::string rp = fmt::format("{}.resources[{}]", tp, i);
    PHX_RETURN_IF_ERROR(CheckKeys(res[i], rp, {"name", "replicas", "rename", "devices"}));
    TimeSlicedResource r;
    if (!res[i]["name"]) return Bad(rp + ".name", "required");
    PHX_ASSIGN_OR_RETURN(r.name, GetString(res[i]["name"], rp + ".name"));
    if (!IsGpuResourceName(r.name)) {
      return Bad(rp + ".name", fmt::format("must be nvidia.com/gpu or nvidia.com/mig-<profile>, "
                                           "got \"{}\"", r.name));
    }
    if (!names.insert(r.name).second) return Bad(rp + ".name", fmt::format("duplicate \"{}\"", r.name));
    if (!res[i]["replicas"]) return Bad(rp + ".replicas", "required");
    PHX_ASSIGN_OR_RETURN(long long replicas, GetInt(res[i]["replicas"], rp + ".replicas"));
    if (replicas < 1 || replicas > 1024) {
      return Bad(rp + ".replicas", fmt::format("must be between 1 and 1024, got {}", replicas));
    }
    r.replicas = static_cast<int>(replicas);
    if (auto n = res[i]["rename"]) {
      PHX_ASSIGN_OR_RETURN(r.rename, GetString(n, rp + ".rename"));
      if (r.rename.find('/') == std::string::npos) {
        return Bad(rp + ".rename", fmt::format("must be a full resource name like "
                                               "nvidia.com/gpu.shared, got \"{}\"", r.rename));
      }
    }
    if (res[i]["devices"] && !(res[i]["devices"].IsScalar() && res[i]["devices"].Scalar() == "all")) {
      return Bad(rp + ".devices", "only \"all\" is supported");
    }
    c.time_slicing.push_back(std::move(r));
  }
  return OkStatus();
}

Status ParseIgnoredXids(const YAML::Node& n, const std::string& path, Config& c) {
  if (!n.IsSequence()) return Bad(path, "expected a list of XIDs");
  c.health.ignored_xids.clear();
  for (size_t i = 0; i < n.size(); ++i) {
    const std::string ip = fmt::format("{}[{}]", path, i);
    PHX_ASSIGN_OR_RETURN(long long x, GetInt(n[i], ip));
    if (x < 1) return Bad(ip, fmt::format("must be a positive XID, got {}", x));
    c.health.ignored_xids.insert(static_cast<unsigned long long>(x));
  }
  return OkStatus();
}

Status ParsePhalanx(const YAML::Node& px, Config& c) {
  // `phalanx.ignoredXids` is the Helm chart's shorthand for `phalanx.health.ignoredXids`.
  PHX_RETURN_IF_ERROR(CheckKeys(px, "phalanx", {"health", "ignoredXids", "publishIntervalSeconds"}));
  if (auto n = px["ignoredXids"]) {
    if (px["health"] && px["health"].IsMap() && px["health"]["ignoredXids"]) {
      return Bad("phalanx.ignoredXids", "set either phalanx.ignoredXids or phalanx.health.ignoredXids, not both");
    }
    PHX_RETURN_IF_ERROR(ParseIgnoredXids(n, "phalanx.ignoredXids", c));
  }
  if (auto h = px["health"]) {
    PHX_RETURN_IF_ERROR(CheckKeys(h, "phalanx.health", {"disabled", "ignoredXids", "recoveryQuietSeconds"}));
    if (auto n = h["disabled"]) {
      PHX_ASSIGN_OR_RETURN(c.health.disabled, GetBool(n, "phalanx.health.disabled"));
    }
    if (auto n = h["ignoredXids"]) {
      PHX_RETURN_IF_ERROR(ParseIgnoredXids(n, "phalanx.health.ignoredXids", c));
    }
    if (auto n = h["recoveryQuietSeconds"]) {
      PHX_ASSIGN_OR_RETURN(long long s, GetInt(n, "phalanx.health.recoveryQuietSeconds"));
      if (s < 0 || s > 86400) {
        return Bad("phalanx.health.recoveryQuietSeconds",
                   fmt::format("must be between 0 and 86400, got {}", s));
      }
      c.health.recovery_quiet_seconds = static_cast<int>(s);
    }
  }
  if (auto n = px["publishIntervalSeconds"]) {
    double v = 0;
    if (!n.IsScalar() || !YAML::convert<double>::decode(n, v) || !(v >= 1.0) || v > 3600) {
      return Bad("phalanx.publishIntervalSeconds", "must be a number between 1 and 3600 (≤ 1 write/s)");
    }
    c.publish_interval_seconds = v;
  }
  return OkStatus();
}

}  // namespace

std::string_view MigStrategyName(MigStrategy s) {
  switch (s) {
    case MigStrategy::kNone: return "none";
    case MigStrategy::kSingle: return "single";
    case MigStrategy::kMixed: return "mixed";
  }
  return "?";
}

Result<MigStrategy> ParseMigStrategy(std::string_view name) {
  if (name == "none") return MigStrategy::kNone;
  if (name == "single") return MigStrategy::kSingle;
  if (name == "mixed") return MigStrategy::kMixed;
  return InvalidArgumentError(fmt::format("must be none, single or mixed, got \"{}\"", name));
}

std::string_view DeviceListStrategyName(DeviceListStrategy s) {
  switch (s) {
    case DeviceListStrategy::kEnvvar: return "envvar";
    case DeviceListStrategy::kVolumeMounts: return "volume-mounts";
    case DeviceListStrategy::kCdiAnnotations: return "cdi-annotations";
    case DeviceListStrategy::kCdiCri: return "cdi-cri";
  }
  return "?";
}

bool Config::HasStrategy(DeviceListStrategy s) const {
  for (auto x : device_list_strategies) {
    if (x == s) return true;
  }
  return false;
}

Result<Config> ParseConfig(std::string_view yaml_text) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(fmt::format("line {}, column {}: {}", e.mark.line + 1,
                                            e.mark.column + 1, e.msg));
  }
  Config c;
  if (root.IsNull()) return InvalidArgumentError("<root>: empty document (need at least `version: v1`)");
  try {
    PHX_RETURN_IF_ERROR(CheckKeys(root, "", {"version", "flags", "sharing", "resources", "phalanx"}));
    if (!root["version"]) return Bad("version", "required (\"v1\")");
    PHX_ASSIGN_OR_RETURN(std::string version, GetString(root["version"], "version"));
    if (version != "v1") return Bad("version", fmt::format("must be \"v1\", got \"{}\"", version));
    if (auto n = root["flags"]) PHX_RETURN_IF_ERROR(ParseFlags(n, c));
    if (auto n = root["sharing"]) PHX_RETURN_IF_ERROR(ParseSharing(n, c));
    if (auto n = root["resources"]) {
      return Bad("resources", "custom resource naming is not supported; use sharing.timeSlicing "
                              "rename");
    }
    if (auto n = root["phalanx"]) PHX_RETURN_IF_ERROR(ParsePhalanx(n, c));
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(fmt::format("line {}: {}", e.mark.line + 1, e.msg));
  }
  return c;
}

Result<Config> LoadConfigFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFoundError(fmt::format("config file {}: cannot be read", path));
  std::stringstream ss;
  ss << in.rdbuf();
  auto c = ParseConfig(ss.str());
  if (!c.ok()) return c.status().WithContext(fmt::format("config file {}", path));
  return c;
}

}  // namespace phalanx::device_plugin
