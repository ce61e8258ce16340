// KubeletDriver: plays one node's kubelet for the end-to-end tests, against the real device
// plugin process registered with that node's FakeKubelet (tests/fakes/kubelet).
//
// For each pod bound to the node, in arrival order (the Bindings' resourceVersion order, as
// kubelet's watch delivers them), it does what kubelet's device manager and pod workers do:
//  - admission: GetPreferredAllocation (when the plugin offers it) over the healthy devices no
//    other pod holds, then Allocate with the chosen IDs; the pod appears in pod-resources; the
//    pod turns Running (containerStatuses running, Ready). Not enough healthy devices: the pod
//    fails with reason UnexpectedAdmissionError, as kubelet does.
//  - deletion (deletionTimestamp set): the "container" handles SIGTERM: it writes its
//    termination message (TerminationMessage(pod), by default a committed checkpoint record)
//    and exits 143; the pod turns Failed, its devices are freed, and the driver deletes it with
//    grace 0 (finalizers may keep the object until their owner removes them).
//  - Finish(): the test ends a running pod (exit code and message), e.g. Succeeded.
// It also keeps the Node's capacity/allocatable `nvidia.com/gpu` equal to the plugin's
// advertised/healthy devices, as kubelet's node status does.
//
// Polls the API server (every `poll`); runs on its own thread between Start() and Stop().
// Thread-safe: the accessors may be called from the test thread.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/kube/client.h"
#include "tests/fakes/kubelet/fake_kubelet.h"

namespace phalanx::e2e {

struct Allocation {
  std::string pod_uid;
  // container -> device IDs, as sent to Allocate (= the GetPreferredAllocation answer when used)
  std::map<std::string, std::vector<std::string>> devices;
  // container -> NVIDIA_VISIBLE_DEVICES from the Allocate answer
  std::map<std::string, std::string> visible_devices;
  bool preferred_allocation_used = false;
};

struct KubeletDriverOptions {
  std::string node_name;
  std::chrono::milliseconds poll{50};
  // The termination message a pod's container writes on SIGTERM. Default: a committed
  // checkpoint record {"step":N,"path":"/ckpt/<pod>/step-N","committed":true} with N = the
  // number of SIGTERMs this driver handled so far plus 100.
  std::function<std::string(const kube::Json& pod)> termination_message;
};

class KubeletDriver {
 public:
  KubeletDriver(KubeletDriverOptions options, fake_kubelet::FakeKubelet& kubelet, kube::KubeClient& client);
  ~KubeletDriver();
  KubeletDriver(const KubeletDriver&) = delete;
  KubeletDriver& operator=(const KubeletDriver&) = delete;

  void Start();
  void Stop();

  const std::string& node_name() const { return options_.node_name; }
  // The allocation of a pod ("<ns>/<name>") admitted by this driver, if any.
  std::optional<Allocation> AllocationOf(const std::string& key) const;
  // Ends a running container: Succeeded with exit 0, else Failed.
  Status Finish(const std::string& ns, const std::string& name, int exit_code, const std::string& message);
  // Errors seen (failed gRPC calls, API errors), for assertion messages.
  std::vector<std::string> errors() const;

 private:
  struct PodState {
    std::string key, uid;
    Allocation allocation;
    bool terminated = false;
  };

  void Loop();
  void SyncOnce();
  void Admit(const kube::Json& pod);
  void Terminate(const kube::Json& pod);
  void SyncNodeStatus();
  void PublishPodResources();  // with mu_ held
  void Error(std::string message);
  kube::Json RunningStatus(const kube::Json& pod) const;

  const KubeletDriverOptions options_;
  fake_kubelet::FakeKubelet& kubelet_;
  kube::KubeClient& client_;

  mutable std::mutex mu_;
  std::map<std::string, PodState> pods_;  // by uid
  std::vector<std::string> errors_;
  int terminations_ = 0;
  int64_t published_capacity_ = -1, published_allocatable_ = -1;

  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace phalanx::e2e
