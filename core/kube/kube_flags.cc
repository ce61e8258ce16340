#include "core/kube/kube_flags.h"

namespace phalanx::kube {

void AddKubeFlags(CLI::App& app, KubeFlags& flags) {
  app.add_option("--kubeconfig", flags.kubeconfig,
                 "kubeconfig file (default: $KUBECONFIG, in-cluster service account, ~/.kube/config)");
  app.add_option("--kube-context", flags.context, "kubeconfig context (default: current-context)");
  app.add_option("--kube-api-qps", flags.qps, "client-side limit of Kubernetes API requests per second")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--kube-api-burst", flags.burst, "burst above --kube-api-qps")
      ->capture_default_str()
      ->check(CLI::Range(1, 1'000'000));
}

Result<std::unique_ptr<KubeClient>> ConnectFromFlags(const KubeFlags& flags, std::string user_agent,
                                                     ClientOptions options) {
  PHX_ASSIGN_OR_RETURN(KubeConfig config, ResolveConfig(flags.kubeconfig, flags.context));
  options.qps = flags.qps;
  options.burst = flags.burst;
  if (!user_agent.empty()) options.user_agent = std::move(user_agent);
  return KubeClient::Create(config, std::move(options));
}

}  // namespace phalanx::kube
