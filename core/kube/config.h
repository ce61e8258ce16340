// KubeConfig: where the API server is and how to authenticate to it, from a kubeconfig file
// or from the pod's service account (in-cluster), as client-go's clientcmd/rest.InClusterConfig.
//
// Every loader fails with ONE clear line naming the file and the field ("kubeconfig
// /etc/k.yaml: user \"admin\": client-key-data is not valid base64"), so a daemon can print it
// and exit. Certificates and keys are loaded into memory (PEM) at load time; only the bearer
// token file is re-read later (projected service-account tokens rotate; see BearerToken).
// Supported user auth: token, tokenFile, client certificates. exec/auth-provider plugins and
// basic auth are rejected with a clear error. Thread-compatible.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "core/base/result.h"

namespace phalanx::kube {

struct KubeConfig {
  std::string server;  // "https://10.0.0.1:443" (scheme://host[:port][/prefix]), no trailing '/'
  std::string ca_pem;  // empty: the system trust store
  std::string client_cert_pem, client_key_pem;  // both or neither
  std::string token;       // static bearer token ("" = none)
  std::string token_file;  // re-read periodically; wins over `token` when set
  bool insecure_skip_tls_verify = false;
  std::string tls_server_name;  // SNI/verification name override ("" = host of `server`)
  std::string default_namespace = "default";  // context namespace, or the pod's namespace
  std::string source;  // for logs: "in-cluster" or "kubeconfig <path> (context <name>)"
};

// Parses kubeconfig YAML text. Relative file paths inside it are resolved against `base_dir`
// (the kubeconfig's directory). `context` "" = current-context. `origin` names the file in errors.
Result<KubeConfig> ParseKubeconfig(std::string_view yaml_text, std::string_view origin,
                                   std::string_view base_dir, std::string_view context = {});
// Reads and parses a kubeconfig file.
Result<KubeConfig> LoadKubeconfigFile(const std::string& path, std::string_view context = {});

// In-cluster: KUBERNETES_SERVICE_HOST/PORT from the environment, token/ca.crt/namespace from
// `secrets_dir`. `getenv` is injectable for tests (null = ::getenv).
inline constexpr const char* kServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";
Result<KubeConfig> LoadInClusterConfig(
    const std::string& secrets_dir = kServiceAccountDir,
    const std::function<std::optional<std::string>(const char*)>& getenv = nullptr);

// The daemons' rule (client-go's): --kubeconfig if given; else $KUBECONFIG (the first existing
// file of its ':'-separated list; lists are not merged); else in-cluster when
// KUBERNETES_SERVICE_HOST is set; else ~/.kube/config; else an error saying all of that.
Result<KubeConfig> ResolveConfig(const std::string& kubeconfig_flag, std::string_view context = {});

// Standard base64 (with or without padding, whitespace ignored), for the *-data fields.
Result<std::string> Base64Decode(std::string_view text);

}  // namespace phalanx::kube
