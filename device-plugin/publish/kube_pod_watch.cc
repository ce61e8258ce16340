#include "device-plugin/publish/kube_pod_watch.h"

#include "core/kube/resource.h"

namespace phalanx::device_plugin {
namespace {

kube::InformerOptions PodOptions(const std::string& node, kube::InformerOptions o) {
  o.resource = kube::resources::kPods;
  o.ns = "";
  o.field_selector = "spec.nodeName=" + node;
  o.label_selector.clear();
  o.resync_period = std::chrono::milliseconds(0);  // a resync would only replay the cache
  o.name = "pods on " + node;
  return o;
}

}  // namespace

KubePodWatch::KubePodWatch(kube::KubeClient& client, const std::string& node, PodCache& cache,
                           kube::InformerOptions tuning)
    : cache_(cache),
      informer_(client, PodOptions(node, std::move(tuning)),
                [](const kube::Json& j) { return DecodePod(j); }) {
  informer_.AddHandlers({
      .on_add = [this](const PodOnNode& p) { cache_.Put(p); },
      .on_update = [this](const PodOnNode&, const PodOnNode& p) { cache_.Put(p); },
      .on_delete = [this](const PodOnNode& p) { cache_.Remove(p.ns, p.name); },
  });
}

KubePodWatch::~KubePodWatch() { Stop(); }

void KubePodWatch::Start() {
  informer_.Start();
  // The informer has no "synced" callback; WaitForSync returns at the first list or at Stop().
  sync_thread_ = std::thread([this] {
    while (!stopped_.load()) {
      if (informer_.WaitForSync(std::chrono::seconds(1))) {
        cache_.SetSynced();
        return;
      }
    }
  });
}

void KubePodWatch::Stop() {
  stopped_.store(true);
  informer_.Stop();
  if (sync_thread_.joinable()) sync_thread_.join();
}

}  // namespace phalanx::device_plugin
