// Publisher: keeps this Node's GPU labels and the phalanx.io/gpu-topology and
// phalanx.io/gpu-state annotations true (DESIGN §2.2, §3 step 6), and answers which
// pending pods on the node carry the extender's device choice (PendingPodSource).
//
// A thread runs PublishOnce() every `interval` (≥ 1 s, so ≤ 1 write/s) and sooner after a
// health change, never sooner than `interval` after the previous attempt. Each pass reads
// pod-resources (who holds which device) and the node's pods (pod UIDs,
// phalanx.io/devices), builds the merge patch and sends it only when it differs from the
// last one written. Failures never stop the daemon: the pass is retried with backoff (up
// to 30 s) and DegradedReason() says why, for /readyz. Allocations that differ from the
// pod's phalanx.io/devices are counted once per pod (annotation mismatches).
// Thread-safe.
#pragma once

#include <condition_variable>
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
#include "device-plugin/publish/pod_resources_client.h"

namespace phalanx::device_plugin {

struct PublisherOptions {
  std::string node_name;
  std::chrono::milliseconds interval{1000};
  std::chrono::milliseconds max_backoff{30'000};
};

class Publisher final : public PendingPodSource {
 public:
  // `api` and `pod_resources` must outlive the publisher; `topology` nullopt = publish
  // labels/state without the topology annotation.
  Publisher(PublisherOptions options, NodeApi& api, PodResourcesClient* pod_resources,
            std::optional<topology::NodeTopology> topology, bool mig_capable,
            std::vector<ResourceSpec> resources, HealthTable& health, const PluginMetrics* metrics,
            std::shared_ptr<spdlog::logger> logger);
  ~Publisher() override;

  void Start();
  void Stop();

  // One pass (the thread's work). OK when written or nothing changed.
  Status PublishOnce();
  // Empty when the last pass succeeded.
  std::string DegradedReason() const;
  int writes() const;

  // Pending, not deleting, annotated, not yet holding devices; live from the API server
  // (fast path), else the last pass's list.
  std::vector<AnnotatedPod> PendingPods() override;

 private:
  void Loop();
  std::vector<AnnotatedPod> Annotated(const std::vector<PodOnNode>& pods, const Allocations& alloc) const;
  void CountMismatches(const std::vector<PodOnNode>& pods, const Allocations& alloc);

  const PublisherOptions options_;
  NodeApi& api_;
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
  bool dirty_ = true;                  // guarded by mu_
  std::string degraded_ = "not published yet";  // guarded by mu_
  std::string last_written_;           // guarded by mu_
  int writes_ = 0;                     // guarded by mu_
  std::vector<PodOnNode> pods_;        // guarded by mu_: last pass
  Allocations allocations_;            // guarded by mu_: last pass
  std::set<std::string> mismatched_;   // guarded by mu_: pod UIDs already counted
  std::thread thread_;
};

// phalanx.io/devices {"<container>":["id",...]} flattened; InvalidArgument if malformed.
Result<std::vector<std::string>> ParseDevicesAnnotation(const std::string& text);

}  // namespace phalanx::device_plugin
