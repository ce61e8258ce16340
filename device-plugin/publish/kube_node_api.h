// KubeNodeApi: NodeApi over core/kube's KubeClient (retries with backoff, 5 QPS). Its client
// also carries the node's pod watch (KubePodWatch) and the plugin's Events.
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
  Status PatchPod(const std::string& ns, const std::string& name, const nlohmann::json& merge_patch) override;
  kube::KubeClient& client() { return *client_; }

 private:
  explicit KubeNodeApi(std::unique_ptr<kube::KubeClient> client) : client_(std::move(client)) {}
  std::unique_ptr<kube::KubeClient> client_;
};

}  // namespace phalanx::device_plugin
