#include "device-plugin/publish/kube_node_api.h"

#include "core/kube/config.h"
#include "core/kube/resource.h"

namespace phalanx::device_plugin {

Result<std::unique_ptr<KubeNodeApi>> KubeNodeApi::Create(const std::string& kubeconfig) {
  PHX_ASSIGN_OR_RETURN(kube::KubeConfig config, kube::ResolveConfig(kubeconfig));
  kube::ClientOptions options;
  options.user_agent = "phalanx-device-plugin";
  options.qps = 5;
  options.burst = 10;
  options.timeout = std::chrono::seconds(10);
  options.max_retries = 2;
  PHX_ASSIGN_OR_RETURN(auto client, kube::KubeClient::Create(config, options));
  return std::unique_ptr<KubeNodeApi>(new KubeNodeApi(std::move(client)));
}

Status KubeNodeApi::PatchNode(const std::string& node, const nlohmann::json& merge_patch) {
  auto r = client_->Patch(kube::resources::kNodes, "", node, kube::PatchType::kMerge, merge_patch,
                          {.field_manager = "phalanx-device-plugin"});
  return r.ok() ? OkStatus() : r.status();
}

Status KubeNodeApi::PatchPod(const std::string& ns, const std::string& name, const nlohmann::json& merge_patch) {
  auto r = client_->Patch(kube::resources::kPods, ns, name, kube::PatchType::kMerge, merge_patch,
                          {.field_manager = "phalanx-device-plugin"});
  return r.ok() ? OkStatus() : r.status();
}

}  // namespace phalanx::device_plugin
