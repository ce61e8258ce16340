// KubePodWatch: keeps a PodCache of the pods bound to one node with core/kube's informer: one
// list, then a watch with fieldSelector=spec.nodeName=<node> that resumes from the last
// resourceVersion after every reconnect and lists again only after 410 Gone. Steady state is
// one open watch per node, re-opened every 5-10 minutes; there is no periodic list.
// Thread-safe; Start() once, Stop() (or the destructor) joins.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "core/kube/informer.h"
#include "device-plugin/publish/pod_cache.h"

namespace phalanx::device_plugin {

class KubePodWatch {
 public:
  // `client` and `cache` must outlive the watch. `tuning`: reflector timings (tests shorten
  // them); its resource and selectors are set here.
  KubePodWatch(kube::KubeClient& client, const std::string& node, PodCache& cache,
               kube::InformerOptions tuning = {});
  ~KubePodWatch();

  void Start();
  void Stop();

  uint64_t lists() const { return informer_.reflector().lists(); }
  uint64_t watches() const { return informer_.reflector().watches(); }

 private:
  PodCache& cache_;
  kube::Informer<PodOnNode> informer_;
  std::atomic<bool> stopped_{false};
  std::thread sync_thread_;  // marks the cache synced once the first list is in
};

}  // namespace phalanx::device_plugin
