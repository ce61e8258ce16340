// Flags every daemon shares for reaching the API server:
//   --kubeconfig PATH   (default: $KUBECONFIG, in-cluster, ~/.kube/config; see ResolveConfig)
//   --kube-context NAME (default: current-context)
//   --kube-api-qps N    client-side requests/s (default 50; client-go's 5 starves informers
//                       over thousands of objects)
//   --kube-api-burst N  (default 100)
// Usage: KubeFlags flags; AddKubeFlags(app, flags); ... CLI11_PARSE ...;
//        auto client = ConnectFromFlags(flags, "phalanx-extender/" + version);
#pragma once

#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "core/kube/client.h"

namespace phalanx::kube {

struct KubeFlags {
  std::string kubeconfig;
  std::string context;
  double qps = 50;
  int burst = 100;
};

void AddKubeFlags(CLI::App& app, KubeFlags& flags);

// Resolves the config and builds a client (options' qps/burst/user_agent from the flags).
// Errors are one line, ready to print before exiting non-zero.
Result<std::unique_ptr<KubeClient>> ConnectFromFlags(const KubeFlags& flags, std::string user_agent,
                                                     ClientOptions options = {});

}  // namespace phalanx::kube
