// Publisher: keeps this Node's GPU labels and the phalanx.io/gpu-topology and
// phalanx.io/gpu-state annotations true (docs/architecture.md §2.2, §3 step 6), and answers which
// pending pods on the node carry the extender's device choice (PendingPodSource).
//
// A thread runs PublishOnce() every `interval` (≥ 1 s). A pass reads only local sources:
// pod-resources (who holds which device, from kubelet) and the PodCache (the node's pods,
// kept by a watch: pod UIDs, phalanx.io/devices). It patches the Node only with the parts
// whose content changed since the last write — labels and topology on start and on health
// changes, the state on allocation and health changes — so an idle node writes nothing and
// the API server sees no periodic request from it. Writes are debounced: never two within
// `interval`; a health change is published at the next pass.
//
// Labels and topology do not depend on pods: they are published even while pod-resources is
// unavailable or the pod list is not in yet (the state waits for both). Failures never stop
// the daemon: DegradedReason() says why for /readyz; a failed write is retried with backoff
// (up to `max_backoff`, sooner on a health change), a missing local source every pass.
// Allocations that differ from the pod's phalanx.io/devices, container by container (a swap
// between two containers of a pod is a difference), are counted once per pod.
// Thread-safe.
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/logger.h>

#include "core/base/clock.h"
#include "core/topology/node_topology.h"
#include "device-plugin/plugin/device_model.h"
#include "device-plugin/plugin/health_table.h"
#include "device-plugin/plugin/plugin_metrics.h"
#include "device-plugin/plugin/resource_server.h"
#include "device-plugin/publish/node_api.h"
#include "device-plugin/publish/node_state.h"
#include "device-plugin/publish/pod_cache.h"
#include "device-plugin/publish/pod_resources_client.h"

namespace phalanx::device_plugin {

struct PublisherOptions {
  std::string node_name;
  std::chrono::milliseconds interval{1000};
  std::chrono::milliseconds max_backoff{30'000};
  // PendingPods: how long to wait for the pod watch when no cached pod can be the one kubelet
  // is admitting (the watch event may trail kubelet's own by milliseconds).
  std::chrono::milliseconds pod_wait{500};
  // The latest utilisation summary per device (utilisation sampling); null = none. It changes
  // at most once per sampling interval, so the state annotation does too.
  std::function<std::shared_ptr<const UsageSummaries>()> usage;
};

class Publisher final : public PendingPodSource {
 public:
  // `api`, `pods` and `pod_resources` must outlive the publisher; `pod_resources` null = no
  // allocations (tests); `topology` nullopt = publish labels/state without the topology
  // annotation.
  Publisher(PublisherOptions options, NodeApi& api, const PodCache& pods, PodResourcesClient* pod_resources,
            std::optional<topology::NodeTopology> topology, bool mig_capable,
            std::vector<ResourceSpec> resources, HealthTable& health, const PluginMetrics* metrics,
            std::shared_ptr<spdlog::logger> logger);
  ~Publisher() override;

  void Start();
  void Stop();

  // One pass (the thread's work). OK when everything is published (or unchanged).
  Status PublishOnce();
  // Empty when the last pass succeeded.
  std::string DegradedReason() const;
  int writes() const;

  // PendingPodSource, from the PodCache (no API call): pods Pending and not deleting, in arrival
  // order, each with its containers asking for `resource` that hold none of its devices per
  // pod-resources, and their plans from phalanx.io/devices.
  View PendingPods(const std::string& resource) override;
  bool WaitForChange(uint64_t version, std::chrono::steady_clock::time_point deadline) override;
  std::chrono::milliseconds watch_grace() const override { return options_.pod_wait; }

 private:
  void Loop();
  void CountMismatches(const std::vector<PodOnNode>& pods, const Allocations& alloc);
  // The state document, or why it cannot be built now.
  Result<std::string> StateDocument();

  const PublisherOptions options_;
  NodeApi& api_;
  const PodCache& pods_;
  PodResourcesClient* pod_resources_;
  const std::optional<topology::NodeTopology> topology_;
  const bool mig_capable_;
  const std::vector<ResourceSpec> resources_;
  std::set<std::string> resource_names_;
  HealthTable& health_;
  const PluginMetrics* metrics_;
  std::shared_ptr<spdlog::logger> logger_;
  int subscription_ = 0;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;                  // guarded by mu_
  bool dirty_ = true;                  // guarded by mu_: health changed since the last pass
  bool write_failed_ = false;          // guarded by mu_: the last pass's patch failed
  std::string degraded_ = "not published yet";  // guarded by mu_
  // What the Node has from us (as written); "" = not written yet.
  std::string written_labels_, written_topology_, written_state_;  // guarded by mu_
  int writes_ = 0;                     // guarded by mu_
  std::shared_ptr<const Allocations> allocations_ = std::make_shared<const Allocations>();  // guarded by mu_
  std::set<std::string> mismatched_;   // guarded by mu_: pod UIDs already counted
  std::thread thread_;
};

// phalanx.io/devices {"<container>":["id",...]}: container -> IDs; InvalidArgument if malformed.
Result<std::map<std::string, std::vector<std::string>>> ParseDevicePlan(const std::string& text);
// The same, flattened over the containers.
Result<std::vector<std::string>> ParseDevicesAnnotation(const std::string& text);

}  // namespace phalanx::device_plugin
