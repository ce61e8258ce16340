// KubeletNode: the API-server side of a fake kubelet, as a real kubelet (v1.26) does it:
//  - watches the pods bound to its node (fieldSelector spec.nodeName=<node>, core/kube's
//    informer) and admits them through the FakeKubelet's DeviceManager one at a time in the
//    order the watch delivered them (kubelet's arrival order); an admitted pod turns Running, a
//    rejected one Failed with reason UnexpectedAdmissionError; a deleted pod's devices are freed;
//  - posts the node's capacity/allocatable of every device-plugin resource every
//    `status_interval` when it changed: the registered plugin's devices (allocatable = healthy);
//    a resource registered before a kubelet restart (kubelet's checkpoint) whose plugin has not
//    registered again yet is posted as 0 — what a real kubelet's first status after a restart says.
// Thread-safe; Start() once, Stop() (or the destructor) joins.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "core/kube/client.h"
#include "core/kube/informer.h"
#include "tests/fakes/kubelet/fake_kubelet.h"

namespace phalanx::fake_kubelet {

struct KubeletNodeOptions {
  std::string node_name;
  std::chrono::milliseconds status_interval{100};
};

class KubeletNode {
 public:
  KubeletNode(KubeletNodeOptions options, FakeKubelet& kubelet, kube::KubeClient& client);
  ~KubeletNode();
  KubeletNode(const KubeletNode&) = delete;
  KubeletNode& operator=(const KubeletNode&) = delete;

  void Start();
  void Stop();

  // Holds admissions (kubelet's sync loop busy, e.g. with a slow admission): pods that arrive
  // meanwhile queue in arrival order and are admitted, in that order, after Release().
  void Hold();
  void Release();
  // Pods the watch delivered that wait for admission.
  size_t queued() const;
  // Admissions finished so far (admitted or rejected), in order, as "<ns>/<name>".
  std::vector<std::string> admission_order() const;
  // The rejection message of a pod, "" when admitted or not seen.
  std::string rejection(const std::string& key) const;
  // Waits until `n` admissions finished since the start.
  ::testing::AssertionResult WaitForAdmissions(size_t n, std::chrono::milliseconds timeout) const;
  // Node statuses posted (capacity, allocatable per resource), oldest first.
  std::vector<std::map<std::string, std::pair<int, int>>> posted_statuses() const;

 private:
  void AdmitLoop();
  void StatusLoop();
  void PostStatus();

  const KubeletNodeOptions options_;
  FakeKubelet& kubelet_;
  kube::KubeClient& client_;
  std::unique_ptr<kube::JsonInformer> informer_;

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  bool stop_ = false;                       // guarded by mu_
  bool held_ = false;                       // guarded by mu_
  std::deque<kube::Json> arrivals_;         // guarded by mu_: pods in watch order, not admitted yet
  std::vector<std::string> admitted_;       // guarded by mu_
  std::map<std::string, std::string> rejected_;  // guarded by mu_
  std::set<std::string> checkpointed_;      // resources ever registered (kubelet's checkpoint)
  std::map<std::string, std::pair<int, int>> last_posted_;
  std::vector<std::map<std::string, std::pair<int, int>>> posted_;  // guarded by mu_
  std::thread admit_thread_, status_thread_;
};

}  // namespace phalanx::fake_kubelet
