// ClusterSync: the informers of API-server mode (docs/architecture.md §2.5, issue 5 item 2) feeding the
// Extender's ledger: nodes, pods (all namespaces), TrainingJobs (phalanx.io/v1alpha1) and
// PriorityClasses (and, through QueueWatch, GpuQueues and namespaces). Adds and updates call Extender::OnNode/OnPod/OnTrainingJob, deletes the
// matching On*Deleted. PodDisruptionBudgets (policy/v1) are kept for preemption (BudgetSource). Pods that request no GPU (whole or MIG) and carry no gang label are kept as a tiny
// stub (the informer needs an object per key) and never reach the ledger.
// A pod without spec.priority (no Priority admission plugin) gets its PriorityClass's value.
//
// Synced() turns true once every informer has listed and its handlers ran: only then is the
// ledger a faithful picture and /readyz may pass.
// Thread-safe. Start() once; Stop() (or the destructor) joins the informer threads.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

#include "core/kube/client.h"
#include "core/kube/informer.h"
#include "core/metrics/registry.h"
#include "extender/eviction/pod_disruption_budgets.h"
#include "extender/extender.h"
#include "extender/objects/k8s_objects.h"
#include "extender/sync/queue_watch.h"

namespace phalanx::extender {

struct PriorityClassInfo {
  std::string name;
  int value = 0;
};

// Decoders (pure; exposed for tests). A pod that requests no GPU and has no gang label
// decodes to a stub with only uid/ns/name.
Result<PodInfo> DecodeInformerPod(const kube::Json& pod);
// The informer's decoder, from the object's raw text: most pods of a cluster request no GPU,
// and a pod whose text mentions neither an nvidia.com/ resource nor a gang label becomes an
// empty stub without being parsed (a stub never reaches the ledger, so it needs no field).
Result<PodInfo> DecodeInformerPodRaw(std::string_view pod_json);
Result<PriorityClassInfo> DecodePriorityClass(const kube::Json& object);

struct ClusterSyncOptions {
  std::chrono::milliseconds resync_period{0};
  // Reflector tuning: how long a watch may stay open before it is re-opened.
  std::chrono::seconds min_watch_timeout{300};
  // False: no PriorityClass informer (pods without spec.priority keep 0). The daemon turns it
  // off when RBAC forbids listing PriorityClasses rather than never becoming ready.
  bool watch_priority_classes = true;
  // False: no PodDisruptionBudget informer (RBAC forbids it); preemption then learns of budgets
  // only from the API server's 429s (extender/eviction/gang_evictor.h).
  bool watch_budgets = true;
  // How often to look for the TrainingJob CRD while it is not installed.
  std::chrono::milliseconds crd_poll_period{10'000};
  // False: no Namespace informer (RBAC forbids it); GpuQueue namespaceSelectors select nothing.
  bool watch_namespaces = true;
  // What GpuQueue objects do not carry (queue_watch.h).
  scheduling::QueueConfig queue_base;
  // Set: phalanx_extender_annotations_refused_total{annotation} counts the annotations refused
  // (malformed or over their size limit, docs/hardening.md §2).
  metrics::Registry* registry = nullptr;
};

// Without the TrainingJob CRD (trainingjobs.phalanx.io answers 404) the extender runs on pods
// alone (gangs from pod labels); it looks for the CRD every crd_poll_period and starts the
// TrainingJob informer once it appears. Notes() says so.
class ClusterSync final : public BudgetSource {
 public:
  ClusterSync(kube::KubeClient& client, Extender& extender, std::shared_ptr<spdlog::logger> logger,
              ClusterSyncOptions options = {});
  ~ClusterSync();
  ClusterSync(const ClusterSync&) = delete;
  ClusterSync& operator=(const ClusterSync&) = delete;

  void Start();
  void Stop();
  bool Synced() const;
  // Names of the informers that have not synced yet ("" when all have).
  std::string Pending() const;
  // Waits until Synced() or the timeout (false then).
  bool WaitForSync(std::chrono::milliseconds timeout) const;
  // What the extender runs without, in words (e.g. "TrainingJob CRD not installed: gangs from
  // pod labels only"); empty when nothing is missing.
  std::vector<std::string> Notes() const;
  std::vector<PdbInfo> BudgetsIn(std::string_view ns) const override;
  // Where Warning Events about malformed GpuQueues go (may be null).
  void SetEventSink(EventSink* events) { queue_watch_.SetEventSink(events); }
  const QueueWatch& queue_watch() const { return queue_watch_; }

 private:
  void WatchForCrd();  // the CRD poller's thread
  PodInfo WithPriority(const PodInfo& pod) const;
  bool ClassesSynced() const;
  bool JobsSynced() const;
  bool BudgetsSynced() const;

  const bool watch_classes_;
  const bool watch_budgets_;
  const std::chrono::milliseconds crd_poll_period_;
  kube::KubeClient& client_;
  Extender& extender_;
  std::shared_ptr<spdlog::logger> logger_;
  metrics::CounterFamily* refused_ = nullptr;
  kube::Informer<PriorityClassInfo> classes_;
  kube::Informer<NodeInfo> nodes_;
  kube::Informer<TrainingJobInfo> jobs_;
  kube::Informer<PodInfo> pods_;
  kube::Informer<PdbInfo> pdbs_;
  QueueWatch queue_watch_;  // GpuQueues and namespaces (team queues)
  std::atomic<bool> crd_missing_{false};
  std::atomic<bool> jobs_started_{false};
  std::mutex crd_mu_;
  std::condition_variable crd_cv_;
  bool stopping_ = false;  // guarded by crd_mu_
  std::thread crd_thread_;
};

}  // namespace phalanx::extender
