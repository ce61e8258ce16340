#include "device-plugin/publish/kube_node_api.h"

#include "core/kube/config.h"
#include "core/kube/resource.h"

namespace phalanx::device_plugin {

Result<std::unique_ptr<KubeNodeApi>> KubeNodeApi::Create(const std::string& kubeconfig) {
  PHX_ASSIGN_OR_RETURN(kube::KubeConfig config, kube::ResolveConfig(kubeconfig));
  kube::ClientOptions normal;
  normal.user_agent = "phalanx-device-plugin";
  normal.qps = 5;
  normal.burst = 10;
  normal.timeout = std::chrono::seconds(10);
  normal.max_retries = 2;
  kube::ClientOptions fast = normal;
  fast.timeout = std::chrono::seconds(1);
  fast.max_retries = 0;
  PHX_ASSIGN_OR_RETURN(auto n, kube::KubeClient::Create(config, normal));
  PHX_ASSIGN_OR_RETURN(auto f, kube::KubeClient::Create(config, fast));
  return std::unique_ptr<KubeNodeApi>(new KubeNodeApi(std::move(n), std::move(f)));
}

Status KubeNodeApi::PatchNode(const std::string& node, const nlohmann::json& merge_patch) {
  auto r = normal_->Patch(kube::resources::kNodes, "", node, kube::PatchType::kMerge, merge_patch,
                          {.field_manager = "phalanx-device-plugin"});
  return r.ok() ? OkStatus() : r.status();
}

Result<std::vector<PodOnNode>> KubeNodeApi::ListPodsOnNode(const std::string& node, bool fast) {
  kube::KubeClient& c = fast ? *fast_ : *normal_;
  PHX_ASSIGN_OR_RETURN(kube::Json list, c.ListAll(kube::resources::kPods, "", {.field_selector = "spec.nodeName=" + node}));
  std::vector<PodOnNode> out;
  if (auto items = list.find("items"); items != list.end() && items->is_array()) {
    for (const auto& item : *items) {
      auto p = DecodePod(item);
      if (p.ok()) out.push_back(std::move(p).value());
    }
  }
  return out;
}

}  // namespace phalanx::device_plugin
