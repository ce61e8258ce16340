// KubeNodeApi: NodeApi over core/kube's KubeClient. Two clients: the publisher's (client
// retries with backoff) and a fast one for the kubelet admission path (one attempt, 1 s
// timeout, so GetPreferredAllocation never waits on a slow API server).
#pragma once

#include <memory>
#include <string>

#include "core/kube/client.h"
#include "device-plugin/publish/node_api.h"

namespace phalanx::device_plugin {

class KubeNodeApi final : public NodeApi {
 public:
  // Errors: the config's (no kubeconfig, no in-cluster environment).
  static Result<std::unique_ptr<KubeNodeApi>> Create(const std::string& kubeconfig);

  Status PatchNode(const std::string& node, const nlohmann::json& merge_patch) override;
  Result<std::vector<PodOnNode>> ListPodsOnNode(const std::string& node, bool fast) override;

 private:
  KubeNodeApi(std::unique_ptr<kube::KubeClient> normal, std::unique_ptr<kube::KubeClient> fast)
      : normal_(std::move(normal)), fast_(std::move(fast)) {}
  std::unique_ptr<kube::KubeClient> normal_;
  std::unique_ptr<kube::KubeClient> fast_;
};

}  // namespace phalanx::device_plugin
