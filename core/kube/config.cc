#include "core/kube/config.h"

#include <array>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

namespace phalanx::kube {
namespace {

Result<std::string> ReadFile(const std::string& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidArgumentError(fmt::format("{} {}: cannot read file", what, path));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string ResolvePath(std::string_view base_dir, const std::string& path) {
  if (path.empty() || path.front() == '/' || base_dir.empty()) return path;
  return (std::filesystem::path(base_dir) / path).string();
}

// Looks up `name` in a kubeconfig list of {name, <field>: {...}} entries.
Result<YAML::Node> FindNamed(const YAML::Node& root, const char* list, const char* field,
                             const std::string& name, std::string_view origin) {
  const YAML::Node items = root[list];
  std::string known;
  if (items && items.IsSequence()) {
    for (const auto& item : items) {
      const auto item_name = item["name"] ? item["name"].as<std::string>("") : std::string();
      if (item_name == name) {
        YAML::Node body = item[field];
        if (!body || !body.IsMap()) {
          return InvalidArgumentError(
              fmt::format("kubeconfig {}: {} \"{}\" has no {} map", origin, list, name, field));
        }
        return body;
      }
      known += known.empty() ? item_name : ", " + item_name;
    }
  }
  return InvalidArgumentError(fmt::format("kubeconfig {}: {} \"{}\" not found (known: {})", origin,
                                          field, name, known.empty() ? "none" : known));
}

std::string Str(const YAML::Node& map, const char* key) {
  const YAML::Node v = map[key];
  return v && v.IsScalar() ? v.as<std::string>() : std::string();
}

// Inline *-data (base64) wins over a file path, as in clientcmd.
Result<std::string> PemField(const YAML::Node& map, const char* data_key, const char* file_key,
                             std::string_view base_dir, const std::string& where) {
  if (std::string data = Str(map, data_key); !data.empty()) {
    auto decoded = Base64Decode(data);
    if (!decoded.ok()) return InvalidArgumentError(fmt::format("{}: {} is not valid base64", where, data_key));
    return *decoded;
  }
  if (std::string file = Str(map, file_key); !file.empty()) {
    auto text = ReadFile(ResolvePath(base_dir, file), fmt::format("{}: {}", where, file_key));
    if (!text.ok()) return text.status();
    return *text;
  }
  return std::string();
}

Status CheckServer(const std::string& server, const std::string& where) {
  if (server.empty()) return InvalidArgumentError(where + ": server is empty");
  if (server.rfind("https://", 0) != 0 && server.rfind("http://", 0) != 0) {
    return InvalidArgumentError(
        fmt::format("{}: server \"{}\" must start with https:// or http://", where, server));
  }
  return OkStatus();
}

}  // namespace

Result<std::string> Base64Decode(std::string_view text) {
  static constexpr auto kTable = [] {
    std::array<int8_t, 256> t{};
    t.fill(-1);
    const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (int i = 0; i < 64; ++i) t[static_cast<unsigned char>(alphabet[i])] = static_cast<int8_t>(i);
    return t;
  }();
  std::string out;
  out.reserve(text.size() * 3 / 4);
  uint32_t acc = 0;
  int bits = 0;
  bool padding = false;
  for (char c : text) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    if (c == '=') {
      padding = true;
      continue;
    }
    const int8_t v = kTable[static_cast<unsigned char>(c)];
    if (v < 0 || padding) return InvalidArgumentError("invalid base64");
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  if (bits >= 6) return InvalidArgumentError("invalid base64 length");
  return out;
}

Result<KubeConfig> ParseKubeconfig(std::string_view yaml_text, std::string_view origin,
                                   std::string_view base_dir, std::string_view context) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(fmt::format("kubeconfig {}: line {}, column {}: {}", origin,
                                            e.mark.line + 1, e.mark.column + 1, e.msg));
  }
  if (!root.IsMap()) return InvalidArgumentError(fmt::format("kubeconfig {}: not a YAML map", origin));
  try {
    std::string context_name(context);
    if (context_name.empty()) context_name = Str(root, "current-context");
    if (context_name.empty()) {
      return InvalidArgumentError(
          fmt::format("kubeconfig {}: no current-context and no context given", origin));
    }
    PHX_ASSIGN_OR_RETURN(YAML::Node ctx, FindNamed(root, "contexts", "context", context_name, origin));
    const std::string cluster_name = Str(ctx, "cluster");
    const std::string user_name = Str(ctx, "user");
    PHX_ASSIGN_OR_RETURN(YAML::Node cluster, FindNamed(root, "clusters", "cluster", cluster_name, origin));

    KubeConfig config;
    config.source = fmt::format("kubeconfig {} (context {})", origin, context_name);
    if (std::string ns = Str(ctx, "namespace"); !ns.empty()) config.default_namespace = ns;

    const std::string cluster_where = fmt::format("kubeconfig {}: cluster \"{}\"", origin, cluster_name);
    config.server = Str(cluster, "server");
    while (!config.server.empty() && config.server.back() == '/') config.server.pop_back();
    PHX_RETURN_IF_ERROR(CheckServer(config.server, cluster_where));
    PHX_ASSIGN_OR_RETURN(config.ca_pem, PemField(cluster, "certificate-authority-data",
                                                 "certificate-authority", base_dir, cluster_where));
    if (YAML::Node v = cluster["insecure-skip-tls-verify"]; v && v.IsScalar()) {
      if (!YAML::convert<bool>::decode(v, config.insecure_skip_tls_verify)) {
        return InvalidArgumentError(cluster_where + ": insecure-skip-tls-verify must be true or false");
      }
    }
    config.tls_server_name = Str(cluster, "tls-server-name");

    if (!user_name.empty()) {
      PHX_ASSIGN_OR_RETURN(YAML::Node user, FindNamed(root, "users", "user", user_name, origin));
      const std::string user_where = fmt::format("kubeconfig {}: user \"{}\"", origin, user_name);
      if (user["exec"] || user["auth-provider"]) {
        return InvalidArgumentError(user_where +
                                    ": exec and auth-provider plugins are not supported; use a token "
                                    "or client certificates");
      }
      if (user["username"] || user["password"]) {
        return InvalidArgumentError(user_where + ": basic auth is not supported");
      }
      config.token = Str(user, "token");
      if (std::string f = Str(user, "tokenFile"); !f.empty()) config.token_file = ResolvePath(base_dir, f);
      PHX_ASSIGN_OR_RETURN(config.client_cert_pem, PemField(user, "client-certificate-data",
                                                            "client-certificate", base_dir, user_where));
      PHX_ASSIGN_OR_RETURN(config.client_key_pem,
                           PemField(user, "client-key-data", "client-key", base_dir, user_where));
      if (config.client_cert_pem.empty() != config.client_key_pem.empty()) {
        return InvalidArgumentError(user_where + ": client certificate and client key must be given together");
      }
      if (!config.token_file.empty()) {
        PHX_RETURN_IF_ERROR(ReadFile(config.token_file, user_where + ": tokenFile").status());
      }
    }
    if (config.server.rfind("http://", 0) == 0 && !config.client_cert_pem.empty()) {
      return InvalidArgumentError(cluster_where + ": client certificates need an https:// server");
    }
    return config;
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(fmt::format("kubeconfig {}: {}", origin, e.msg));
  }
}

Result<KubeConfig> LoadKubeconfigFile(const std::string& path, std::string_view context) {
  PHX_ASSIGN_OR_RETURN(std::string text, ReadFile(path, "kubeconfig"));
  const std::string dir = std::filesystem::path(path).parent_path().string();
  return ParseKubeconfig(text, path, dir, context);
}

Result<KubeConfig> LoadInClusterConfig(
    const std::string& secrets_dir,
    const std::function<std::optional<std::string>(const char*)>& getenv) {
  auto env = [&](const char* name) -> std::string {
    if (getenv) return getenv(name).value_or("");
    const char* v = std::getenv(name);
    return v ? v : "";
  };
  const std::string host = env("KUBERNETES_SERVICE_HOST");
  const std::string port = env("KUBERNETES_SERVICE_PORT");
  if (host.empty() || port.empty()) {
    return FailedPreconditionError(
        "in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set (not running in a pod?)");
  }
  KubeConfig config;
  config.source = "in-cluster";
  // IPv6 service addresses need brackets in a URL.
  const bool v6 = host.find(':') != std::string::npos;
  config.server = fmt::format("https://{}{}{}:{}", v6 ? "[" : "", host, v6 ? "]" : "", port);
  config.token_file = secrets_dir + "/token";
  PHX_RETURN_IF_ERROR(ReadFile(config.token_file, "in-cluster config: token").status());
  PHX_ASSIGN_OR_RETURN(config.ca_pem, ReadFile(secrets_dir + "/ca.crt", "in-cluster config: CA"));
  if (auto ns = ReadFile(secrets_dir + "/namespace", "namespace"); ns.ok()) {
    std::string n = *ns;
    while (!n.empty() && (n.back() == '\n' || n.back() == ' ')) n.pop_back();
    if (!n.empty()) config.default_namespace = n;
  }
  return config;
}

Result<KubeConfig> ResolveConfig(const std::string& kubeconfig_flag, std::string_view context) {
  if (!kubeconfig_flag.empty()) return LoadKubeconfigFile(kubeconfig_flag, context);
  if (const char* list = std::getenv("KUBECONFIG"); list && *list) {
    std::stringstream ss(list);
    std::string path;
    std::string tried;
    while (std::getline(ss, path, ':')) {
      if (path.empty()) continue;
      if (std::filesystem::exists(path)) return LoadKubeconfigFile(path, context);
      tried += tried.empty() ? path : ", " + path;
    }
    return InvalidArgumentError(fmt::format("KUBECONFIG={}: no such file ({})", list, tried));
  }
  if (const char* host = std::getenv("KUBERNETES_SERVICE_HOST"); host && *host) {
    return LoadInClusterConfig();
  }
  if (const char* home = std::getenv("HOME"); home && *home) {
    const std::string path = std::string(home) + "/.kube/config";
    if (std::filesystem::exists(path)) return LoadKubeconfigFile(path, context);
  }
  return FailedPreconditionError(
      "no Kubernetes config: pass --kubeconfig, set KUBECONFIG, run in a pod, or create ~/.kube/config");
}

}  // namespace phalanx::kube
