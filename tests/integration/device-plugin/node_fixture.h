// One GPU node for tests with the fake API server: a kubelet directory, the FakeKubelet on it
// with its API side (KubeletNode: pods admitted in watch order, node status) and the real
// phalanx-device-plugin binary publishing for that node. Header-only test code.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/json/json.h"
#include "core/kube/client.h"
#include "core/kube/config.h"
#include "tests/fakes/apiserver/fake_apiserver.h"
#include "tests/fakes/kubelet/kubelet_node.h"
#include "tests/integration/device-plugin/daemon_process.h"

namespace phalanx::device_plugin::testing {

inline std::unique_ptr<kube::KubeClient> ClientFor(const fakes::apiserver::FakeApiServer& api) {
  auto cfg = kube::ParseKubeconfig(api.Kubeconfig(), "test", "/tmp", "");
  EXPECT_TRUE(cfg.ok()) << cfg.status();
  if (!cfg.ok()) return nullptr;
  kube::ClientOptions options;
  options.qps = 0;  // a test driver and kubelets, not one rate-limited controller
  auto client = kube::KubeClient::Create(*cfg, options);
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? std::move(client).value() : nullptr;
}

// A pod asking for GPUs per container ({name, count}); `devices` = phalanx.io/devices; `node`
// empty = not bound yet.
inline json::Json GpuPod(const std::string& name, const std::string& node,
                         const std::vector<std::pair<std::string, int>>& containers, const std::string& devices = "",
                         const std::string& gang = "") {
  json::Json cs = json::Json::array();
  for (const auto& [c, n] : containers) {
    cs.push_back({{"name", c}, {"image", "trainer"}, {"resources", {{"limits", {{"nvidia.com/gpu", std::to_string(n)}}}}}});
  }
  json::Json pod = {{"apiVersion", "v1"},
                    {"kind", "Pod"},
                    {"metadata", {{"name", name}, {"namespace", "ml"}}},
                    {"spec", {{"containers", cs}}}};
  if (!node.empty()) pod["spec"]["nodeName"] = node;
  if (!devices.empty()) pod["metadata"]["annotations"] = {{"phalanx.io/devices", devices}};
  if (!gang.empty()) pod["metadata"]["labels"] = {{"phalanx.io/gang", gang}};
  return pod;
}

class GpuNode {
 public:
  // `root`: a fresh directory for this node's kubelet.
  GpuNode(std::string name, std::string root, fakes::apiserver::FakeApiServer& api, kube::KubeClient& client)
      : name_(std::move(name)), root_(std::move(root)), api_(api), client_(client) {
    std::filesystem::create_directories(root_);
    auto k = fake_kubelet::FakeKubelet::Start(root_);
    EXPECT_TRUE(k.ok()) << k.status();
    if (k.ok()) kubelet_ = std::move(k).value();
    EXPECT_TRUE(api_.Create("nodes", json::Json{{"metadata", {{"name", name_}}}}).ok());
  }
  ~GpuNode() {
    daemon_.reset();  // before the kubelet and the API server
    node_.reset();
    kubelet_.reset();
  }

  // The daemon on `machine`, publishing through `kubeconfig`, plus the kubelet's API side.
  DaemonProcess& Start(const std::string& machine, const std::string& kubeconfig, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"--kubelet-dir", root_, "--nvml-library", FAKE_NVML_LIBRARY,
                                     "--metrics-addr", "127.0.0.1:0", "--kubelet-poll-ms", "50",
                                     "--kubeconfig", kubeconfig, "--utilisation-interval", "0"};
    args.insert(args.end(), extra.begin(), extra.end());
    daemon_ = std::make_unique<DaemonProcess>(
        args,
        std::map<std::string, std::string>{{"FAKE_NVML_MACHINE", std::string(FAKE_NVML_MACHINES) + "/" + machine + ".json"},
                                           {"NODE_NAME", name_}},
        root_ + "/daemon-" + std::to_string(++starts_) + ".log");
    node_ = std::make_unique<fake_kubelet::KubeletNode>(fake_kubelet::KubeletNodeOptions{.node_name = name_},
                                                        *kubelet_, client_);
    node_->Start();
    return *daemon_;
  }

  const std::string& name() const { return name_; }
  fake_kubelet::FakeKubelet& kubelet() { return *kubelet_; }
  fake_kubelet::KubeletNode& node() { return *node_; }
  DaemonProcess& daemon() { return *daemon_; }
  // container -> devices the fake kubelet allocated for pod "ml/<name>"; empty if not admitted.
  std::map<std::string, std::vector<std::string>> Allocated(const std::string& pod) const {
    std::map<std::string, std::vector<std::string>> out;
    for (const auto& [uid, a] : kubelet_->devices().admitted()) {
      if (a.pod.ns + "/" + a.pod.name != "ml/" + pod) continue;
      for (const auto& [container, by_resource] : a.devices) {
        if (auto it = by_resource.find("nvidia.com/gpu"); it != by_resource.end()) out[container] = it->second;
      }
    }
    return out;
  }

 private:
  const std::string name_, root_;
  fakes::apiserver::FakeApiServer& api_;
  kube::KubeClient& client_;
  std::unique_ptr<fake_kubelet::FakeKubelet> kubelet_;
  std::unique_ptr<fake_kubelet::KubeletNode> node_;
  std::unique_ptr<DaemonProcess> daemon_;
  int starts_ = 0;
};

}  // namespace phalanx::device_plugin::testing
