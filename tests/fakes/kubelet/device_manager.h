// DeviceManager: kubelet's device manager admitting pods against the plugins registered with a
// FakeKubelet (pkg/kubelet/cm/devicemanager, v1.26), as a real kubelet does it:
//  - one pod at a time (kubelet's sync loop admits pods sequentially; Admit() holds a lock for the
//    whole admission), in the order the caller hands them over (kubelet: its watch's order);
//  - for each container asking for a registered resource — initContainers, then containers, in
//    spec order — GetPreferredAllocation (when the plugin offers it) with every healthy device no
//    admitted container holds, must-include empty, size = the request; then the preferred devices
//    that are available, filled up from the available ones (kubelet's fallback), and one Allocate
//    with exactly that container's devices;
//  - not enough healthy devices, an unregistered resource or a failing call rejects the pod
//    (UnexpectedAdmissionError; its devices are released, nothing is retried);
//  - admitted pods appear in pod-resources (List) with their containers' devices; Release() frees
//    a pod's devices (the pod is gone).
// Thread-safe.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "core/base/result.h"
#include "proto/deviceplugin/v1beta1/api.pb.h"

namespace phalanx::fake_kubelet {

class FakeKubelet;

struct ContainerSpec {
  std::string name;
  bool init = false;
  std::map<std::string, int> requests;  // extended resource -> devices
};

struct PodSpec {
  std::string ns, name, uid;
  std::vector<ContainerSpec> containers;  // any order; admission follows kubelet's
};

struct AdmittedPod {
  PodSpec pod;
  // container -> resource -> device IDs sent to Allocate
  std::map<std::string, std::map<std::string, std::vector<std::string>>> devices;
  // container -> resource -> what GetPreferredAllocation answered (absent: not asked)
  std::map<std::string, std::map<std::string, std::vector<std::string>>> preferred;
  // container -> the Allocate answer (last resource)
  std::map<std::string, v1beta1::ContainerAllocateResponse> responses;
};

// One call kubelet made to a plugin during admission, in order (tests check the sequence).
struct AdmissionCall {
  std::string pod, container, resource;
  std::string method;  // "GetPreferredAllocation" | "Allocate"
};

class DeviceManager {
 public:
  explicit DeviceManager(FakeKubelet& kubelet) : kubelet_(kubelet) {}

  // Admits `pod` (see the file comment). The error is kubelet's rejection message.
  Result<AdmittedPod> Admit(const PodSpec& pod);
  void Release(const std::string& uid);
  // Serves the admitted pods on pod-resources again (a restarted kubelet reads its checkpoint).
  void Republish();
  std::vector<AdmissionCall> calls() const;
  std::map<std::string, AdmittedPod> admitted() const;  // by uid

 private:
  void PublishPodResourcesLocked();

  FakeKubelet& kubelet_;
  std::mutex admit_mu_;  // one admission at a time
  mutable std::mutex mu_;
  std::map<std::string, AdmittedPod> admitted_;  // guarded by mu_
  std::vector<AdmissionCall> calls_;             // guarded by mu_
};

}  // namespace phalanx::fake_kubelet
