// Cluster: the end-to-end fixture. Starts, in order, and stops in reverse:
//   1. fake-apiserver (process) seeded with the namespace, the chart's PriorityClass tiers and one
//      Node per simulated node (allocatable nvidia.com/gpu = the fake NVML machine's GPU count);
//   2. per node: a FakeKubelet (in-process, tests/fakes/kubelet) under <dir>/<node>/kubelet, the
//      real phalanx-device-plugin process on the fake NVML library (a per-node copy of the machine
//      JSON with node-unique GPU UUIDs, an events file for XIDs), and its KubeletDriver;
//   3. phalanx-operator (process), when asked;
//   4. phalanx-extender (process) in API-server mode and the SchedulerDriver, when asked.
// Daemons get the chart's flags with shortened intervals; each waits for its /readyz. Logs of
// every process stay under dir(); LogTails() collects them for failure messages.
// Thread-compatible: the test thread owns it.
#pragma once

#include <chrono>
#include <map>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/result.h"
#include "core/kube/client.h"
#include "tests/e2e/drivers/kubelet_driver.h"
#include "tests/e2e/drivers/scheduler_driver.h"
#include "tests/e2e/harness/files.h"
#include "tests/e2e/harness/process.h"
#include "tests/fakes/kubelet/fake_kubelet.h"

namespace phalanx::e2e {

struct NodeSpec {
  std::string name;
  std::string machine = "dgx-h100";  // tests/fakes/nvml/machines/<machine>.json
  // Every GPU of the node runs at this SM utilisation (the fake NVML's constant curve);
  // unset: as the machine file says.
  std::optional<double> sm_percent;
  // false: no kubelet, device plugin or kubelet driver for this node (a large cluster on 2
  // cores); its Node carries a copy of the first agent node's published GPU labels and
  // annotations (UUIDs and node name rewritten), so the extender plans it like the others.
  // Pods bound there are never admitted, run or terminated. Needs one node with agents.
  bool agents = true;
};

struct ClusterOptions {
  std::vector<NodeSpec> nodes;
  bool start_operator = true;
  bool start_extender = true;  // also the scheduler driver
  std::string namespace_ = "ml";
  std::vector<std::string> extra_extender_args;
  std::vector<std::string> extra_operator_args;
  std::vector<std::string> extra_device_plugin_args;
  // The operator's progress endpoint (--progress-addr) on a free port; off by default.
  bool progress_endpoint = false;
  // What the workers write as their termination message when stopped (KubeletDriverOptions);
  // unset = the driver's default, a new committed checkpoint.
  std::function<std::string(const kube::Json& pod)> termination_message;
  // Manifests (YAML files, paths relative to the source tree) applied as `kubectl apply -f`
  // once the API server runs and before any daemon starts: what the chart installs first
  // (e.g. helm/phalanx/crds/phalanx.io_gpuqueues.yaml).
  std::vector<std::string> manifests;
  // The SchedulerDriver follows kube-scheduler v1.26's scheduling queue (drivers/scheduling_queue.h)
  // instead of retrying every failed pod after 250 ms.
  bool kube_scheduler_queue = false;
  // The SchedulerDriver plays a v1.26 kube-scheduler without PodSchedulingReadiness: it tries
  // gated pods too (SchedulerDriverOptions::respect_scheduling_gates = false).
  bool scheduler_ignores_gates = false;
  // Another phalanx-operator binary (a before/after comparison); "" = the build's.
  std::string operator_binary;
};

// Paths of the binaries under test (built by the e2e target's dependencies).
std::string BinaryPath(const std::string& relative);

class Cluster {
 public:
  static Result<std::unique_ptr<Cluster>> Start(ClusterOptions options);
  ~Cluster();
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  const std::string& dir() const { return dir_.path(); }
  const std::string& kubeconfig() const { return kubeconfig_; }
  const std::string& ns() const { return options_.namespace_; }
  kube::KubeClient& client() { return *client_; }
  std::string api_url() const;
  // `kubectl apply -f -` of `yaml` (harness/apply.h); namespaced objects without one go to ns().
  Result<std::vector<kube::Json>> Apply(std::string_view yaml);
  // http://127.0.0.1:<port> of the operator's progress endpoint ("" unless progress_endpoint).
  std::string progress_url() const {
    return progress_port_ == 0 ? "" : "http://127.0.0.1:" + std::to_string(progress_port_);
  }

  // Only for nodes with agents (NodeSpec::agents).
  fake_kubelet::FakeKubelet& kubelet(const std::string& node) { return *nodes_.at(node).kubelet; }
  KubeletDriver& kubelet_driver(const std::string& node) { return *nodes_.at(node).driver; }
  Process& device_plugin(const std::string& node) { return *nodes_.at(node).plugin; }
  // The GPU UUIDs of a node's fake machine, by index.
  const std::vector<std::string>& gpu_uuids(const std::string& node) const { return nodes_.at(node).uuids; }
  // Appends an NVML event line (tests/fakes/nvml README) to the node's events file.
  Status InjectNvmlEvent(const std::string& node, const std::string& json_line);
  // Restarts the node's fake kubelet (socket directory wiped) as kubelet does on restart.
  Status RestartKubelet(const std::string& node);
  // Kills the node's device plugin (SIGKILL, a crash) and starts it again with the same flags;
  // returns once kubelet accepted its new registration.
  Status RestartDevicePlugin(const std::string& node);

  Process* operator_process() { return operator_.get(); }
  Process* extender_process() { return extender_.get(); }
  SchedulerDriver* scheduler() { return scheduler_.get(); }
  // The extender's verbs, as the chart's urlPrefix: "http://127.0.0.1:PORT/v1".
  std::string extender_url() const { return "http://127.0.0.1:" + std::to_string(extender_port_) + "/v1"; }
  // The extender's --metrics-addr (/metrics, /debug/explain, /debug/state), as `phalanx explain
  // --extender` takes it.
  std::string extender_metrics_url() const { return "http://127.0.0.1:" + std::to_string(extender_metrics_port_); }
  // Kills the extender (SIGKILL, a crash) and starts it again on the same ports.
  Status RestartExtender();
  // Kills the operator (SIGKILL, a crash) and starts it again on the same ports.
  Status RestartOperator();

  // GET http://127.0.0.1:<metrics port>/metrics of a daemon ("operator", "extender", or a node name
  // for its device plugin); "" on failure.
  std::string Metrics(const std::string& component);
  // The value of one sample ("name{labels}" exactly as exposed, or "name" without labels).
  std::optional<double> Metric(const std::string& component, const std::string& sample);

  // Tails of every process's logs and the drivers' errors.
  std::string Diagnostics();

 private:
  struct Node {
    NodeSpec spec;
    std::string dir, machine_file, events_file;
    std::vector<std::string> uuids;
    uint16_t metrics_port = 0;
    std::unique_ptr<fake_kubelet::FakeKubelet> kubelet;
    std::unique_ptr<Process> plugin;
    std::unique_ptr<KubeletDriver> driver;
  };

  explicit Cluster(ClusterOptions options) : options_(std::move(options)) {}
  Status StartApiServer();
  Status StartNode(Node& node, size_t index);
  Status LaunchDevicePlugin(Node& node);
  Status PublishAgentlessNodes();
  Status StartOperator();
  Status StartExtender();
  Status WaitReady(Process& process, uint16_t port);
  std::unique_ptr<Process> Launch(const std::string& name, const std::string& binary, std::vector<std::string> args,
                                  std::vector<std::pair<std::string, std::string>> env, Status* error);

  ClusterOptions options_;
  TempDir dir_;
  std::string kubeconfig_;
  std::unique_ptr<Process> apiserver_;
  uint16_t api_port_ = 0;
  std::unique_ptr<kube::KubeClient> client_;
  std::map<std::string, Node> nodes_;
  std::unique_ptr<Process> operator_;
  uint16_t operator_metrics_port_ = 0;
  uint16_t progress_port_ = 0;
  std::unique_ptr<Process> extender_;
  uint16_t extender_port_ = 0, extender_metrics_port_ = 0;
  std::unique_ptr<SchedulerDriver> scheduler_;
};

}  // namespace phalanx::e2e
