#include "operator/crds/apply_crds_command.h"

#include <fmt/format.h>

#include "core/kube/client.h"
#include "core/kube/config.h"
#include "core/kube/crd_apply.h"
#include "core/log/log.h"
#include "core/log/logger_factory.h"
#include "operator/crds/crd_manifests.h"

namespace phalanx::op {

int RunApplyCrds(const ApplyCrdsFlags& flags) {
  auto logger = log::MakeLogger("apply-crds");
  auto config = kube::ResolveConfig(flags.kubeconfig);
  if (!config.ok()) {
    PHX_LOG_ERROR(logger, "No API server to apply the CRDs to", kv("error", config.status().message()));
    return 2;
  }
  auto client = kube::KubeClient::Create(*config);
  if (!client.ok()) {
    PHX_LOG_ERROR(logger, "Cannot create the API client", kv("error", client.status().message()));
    return 2;
  }
  std::vector<std::string> manifests;
  for (const auto& m : ChartCrdManifests()) manifests.push_back(m.yaml);
  kube::CrdApplyOptions options;
  options.established_timeout = flags.timeout;
  auto outcomes = kube::ApplyCrds(**client, manifests, options);
  if (!outcomes.ok()) {
    PHX_LOG_ERROR(logger, "CRDs not applied", kv("error", outcomes.status().message()));
    return 1;
  }
  for (const auto& o : *outcomes) {
    PHX_LOG_INFO(logger, "CRD applied", kv("crd", o.name), kv("change", std::string(kube::ChangeName(o.change))),
                 kv("generation", o.generation));
  }
  return 0;
}

}  // namespace phalanx::op
