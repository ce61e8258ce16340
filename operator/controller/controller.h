// Controller: the TrainingJob control loop against the API server. Thin adapter around the
// pure Reconcile() (operator/reconcile/reconcile.h):
//   informers (TrainingJobs; pods and Services labelled phalanx.io/job-name) -> handlers
//   enqueue "<ns>/<job>" -> workers call ReconcileKey -> plan applied in ReconcilePlan's order.
// Status is written with PUT .../status carrying the read resourceVersion; on 409 the job is
// re-read and reconciled again (the plan depends on the status it started from), so nothing
// is decided twice or on stale data. Objects from the cache are never mutated.
// Thread-safe: Run() blocks; Stop() from any thread.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <spdlog/logger.h>

#include "core/base/clock.h"
#include "core/kube/client.h"
#include "core/kube/informer.h"
#include "core/kube/work_queue.h"
#include "operator/api/observed_pod.h"
#include "operator/controller/node_products.h"
#include "operator/controller/operator_metrics.h"
#include "operator/lifecycle/checkpoint.h"
#include "operator/reconcile/reconcile.h"

namespace phalanx::op {

struct ControllerOptions {
  std::string ns;  // "" = all namespaces
  int workers = 4;
  ReconcileOptions reconcile;
  std::string field_manager = "phalanx-operator";
  int max_conflict_retries = 5;
  // A job's new pods are created in parallel batches of 1, 2, 4, ... up to this many
  // (slow_start.h).
  int max_parallel_creates = 32;
  // Informer reflector tuning (tests shorten it).
  std::chrono::seconds min_watch_timeout{300};
};

// A job as cached: the decoded job plus the raw object the status PUT is built from.
struct CachedJob {
  kube::Json raw;
  Status error;     // DecodeTrainingJob failed (e.g. unreadable status): reconcile reports it
  TrainingJob job;  // valid when error is OK
};

struct NamedObject {
  std::string namespace_, name;
};

class Controller {
 public:
  Controller(kube::KubeClient& client, ControllerOptions options, OperatorMetrics& metrics,
             std::shared_ptr<spdlog::logger> logger, const Clock& clock);
  ~Controller();

  // Starts the informers and waits (up to `timeout`) for their first lists.
  Status StartInformers(std::chrono::milliseconds timeout);
  bool Synced() const;
  // Runs the workers until Stop().
  void Run();
  void Stop();

  // One reconcile of "<ns>/<name>" (the workers' body; public for tests).
  Status ReconcileKey(const std::string& key);

  // Progress endpoint: a committed checkpoint reported by pod `ns/pod` (already
  // authenticated as that pod, uid `pod_uid`). kNotFound: unknown pod or job;
  // kPermissionDenied: uid mismatch. Returns whether the record moved forward.
  Result<bool> ReportProgress(const std::string& ns, const std::string& pod, const std::string& pod_uid,
                              const CheckpointReport& report);

  size_t QueueLength() const { return queue_.Len(); }

 private:
  Status ReconcileOnce(const std::string& key, const kube::Json* fresh, bool& conflict);
  Status Apply(const CachedJob& job, const ReconcilePlan& plan, bool& conflict);
  Status ApplyPods(const std::string& ns, const ReconcilePlan& plan, const std::vector<ObservedPod>& pods);
  void EmitEvents(const TrainingJob& job, const ReconcilePlan& plan);
  std::vector<ObservedPod> PodsOf(const std::string& ns, const std::string& job);
  void Enqueue(const std::string& ns, const std::string& name);
  // The newest copy of a job: the informer's, or the one our last status write returned.
  std::shared_ptr<const CachedJob> Latest(const std::string& key);

  kube::KubeClient& client_;
  const ControllerOptions options_;
  OperatorMetrics& metrics_;
  std::shared_ptr<spdlog::logger> logger_;
  const Clock& clock_;
  kube::WorkQueue queue_;
  std::unique_ptr<kube::Informer<CachedJob>> jobs_;
  std::unique_ptr<kube::Informer<ObservedPod>> pods_;
  std::unique_ptr<kube::Informer<NamedObject>> services_;
  NodeProducts node_products_;
  std::mutex written_mu_;
  std::map<std::string, std::shared_ptr<const CachedJob>> written_;  // guarded by written_mu_
};

Result<CachedJob> DecodeCachedJob(const kube::Json& object);

}  // namespace phalanx::op
