// NodeEvents: the device plugin's Kubernetes Events on its Node (events.k8s.io/v1 through
// core/kube's EventRecorder: aggregated into series, best effort, never blocking the caller):
//   Warning GpuUnhealthy        a device turned Unhealthy ("GPU-…: XID 79")
//   Normal  GpuRecovered        it is Healthy again
//   Normal  Registered          a resource registered with kubelet (at start, after a kubelet
//                               restart or a config reload)
//   Warning RegistrationFailed  the first failure of a resource after a success (or at start);
//                               the retries that follow are in the log, not in Events
// and, regarding a pod: Warning GpuIdle / Normal GpuActive (utilisation monitor), Warning
// GpuPlanNotHonoured (a container did not get the devices phalanx.io/devices planned for it).
// The Node is referenced by name (its uid is not needed: kubelet's own node Events do the same).
// Thread-safe.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "core/base/status.h"
#include "core/kube/event_recorder.h"
#include "device-plugin/plugin/admission_match.h"
#include "device-plugin/plugin/health_table.h"

namespace phalanx::device_plugin {

class NodeEvents {
 public:
  // `client` and `health` must outlive this.
  NodeEvents(kube::KubeClient& client, const std::string& node, HealthTable& health,
             kube::EventRecorderOptions options = {});
  ~NodeEvents();

  // Subscribes to health changes (devices already unhealthy are reported at once) and starts
  // flushing Events.
  void Start();
  void Stop();  // flushes what is queued

  // A registration attempt's outcome (PluginManager's hook).
  void Registration(const std::string& resource, size_t devices, const Status& result);

  // An Event on a pod of this node (GpuIdle / GpuActive from the utilisation monitor), in the
  // pod's namespace.
  void PodEvent(const std::string& ns, const std::string& name, const std::string& uid, const std::string& type,
                const std::string& reason, const std::string& note);
  // Warning GpuPlanNotHonoured on the pod: which container, planned and given devices, why.
  void PlanMiss(const std::string& resource, const struct PlanMiss& miss);

 private:
  void OnHealthChange();

  HealthTable& health_;
  const kube::ObjectReference node_;
  kube::EventRecorder recorder_;
  int subscription_ = 0;
  std::mutex mu_;
  std::map<std::string, DeviceHealth> unhealthy_;   // guarded by mu_: as last reported
  std::map<std::string, bool> registration_ok_;     // guarded by mu_: resource -> last outcome
};

}  // namespace phalanx::device_plugin
