// QueueWatch: the GpuQueue objects (phalanx.io/v1alpha1 gpuqueues, cluster-scoped) and the
// namespaces' labels, watched by informers, as the engine's team queues
// (Extender::SetQueues). Informer events only mark the picture dirty; one thread assembles
// the whole set (queue_sync.h) once both informers have listed, and again after every
// change, so a burst of events (or the initial list, object by object) is applied once and
// a child is never judged before its parent arrived.
//
// A malformed GpuQueue is skipped with a Warning Event on it and a log line naming the
// field; its last valid version (or none) stays in force. A set that does not validate as a
// whole (no default queue, a missing parent...) changes nothing, with a warning likewise.
// Without the GpuQueue CRD (404) the extender runs without queues and looks for the CRD every
// crd_poll_period; Notes() says so. Without RBAC for namespaces (watch_namespaces false),
// namespaceSelector selects nothing and Notes() says so.
// Thread-safe. Start() once; Stop() (or the destructor) joins the threads.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

#include "core/kube/client.h"
#include "core/kube/informer.h"
#include "extender/extender.h"
#include "extender/queues/queue_sync.h"
#include "extender/writes/event_sink.h"

namespace phalanx::extender {

inline const kube::Resource kGpuQueues{"phalanx.io", "v1alpha1", "gpuqueues", false, "GpuQueue"};

struct QueueWatchOptions {
  std::chrono::milliseconds resync_period{0};
  std::chrono::seconds min_watch_timeout{300};
  bool watch_namespaces = true;
  std::chrono::milliseconds crd_poll_period{10'000};
  // What GpuQueues do not carry: cross-queue preemption priority, reclaim delay.
  scheduling::QueueConfig base;
};

class QueueWatch {
 public:
  QueueWatch(kube::KubeClient& client, Extender& extender, std::shared_ptr<spdlog::logger> logger,
             QueueWatchOptions options = {});
  ~QueueWatch();
  QueueWatch(const QueueWatch&) = delete;
  QueueWatch& operator=(const QueueWatch&) = delete;

  void SetEventSink(EventSink* events) { events_.store(events); }
  void Start();
  void Stop();
  // The CRD is missing, or the queues as listed have been handed to the extender.
  bool Synced() const { return crd_missing_ || applied_; }
  std::vector<std::string> Notes() const;
  // The GpuQueue objects as last listed (status writing reads names and generations).
  std::vector<std::shared_ptr<const GpuQueueInfo>> Queues() const { return queues_.List(); }
  // Why the GpuQueues as last listed are not in force as a whole ("" = they are): the
  // AssignQueues / SetQueues error (GpuQueue status condition Active, queue_status.h).
  std::string SetError() const {
    std::lock_guard lock(set_error_mu_);
    return set_error_;
  }

 private:
  void Run();
  void StartInformers();
  bool InformersSynced() const;
  void Apply();  // mu_ not held
  void Warn(const GpuQueueInfo* about, const std::string& message);
  void MarkDirty();

  kube::KubeClient& client_;
  Extender& extender_;
  std::shared_ptr<spdlog::logger> logger_;
  const QueueWatchOptions options_;
  std::atomic<EventSink*> events_{nullptr};
  kube::Informer<GpuQueueInfo> queues_;
  kube::Informer<NamespaceInfo> namespaces_;
  std::atomic<bool> crd_missing_{false};
  std::atomic<bool> applied_{false};
  bool informers_started_ = false;  // Run's thread (and Stop after the join)

  std::mutex mu_;
  std::condition_variable cv_;
  bool dirty_ = false;     // guarded by mu_
  bool stopping_ = false;  // guarded by mu_
  std::thread thread_;

  // Apply's own state (its thread only).
  std::map<std::string, GpuQueueInfo> last_valid_;      // by name: the version in force
  std::map<std::string, std::string> warned_;           // by name: the error last warned about
  std::string set_error_warned_;
  mutable std::mutex set_error_mu_;
  std::string set_error_;  // guarded by set_error_mu_
};

}  // namespace phalanx::extender
