#include "extender/sync/queue_watch.h"

#include "core/kube/api_error.h"
#include "core/log/log.h"

namespace phalanx::extender {
namespace {

kube::InformerOptions Options(const kube::Resource& resource, const QueueWatchOptions& o) {
  kube::InformerOptions opts;
  opts.resource = resource;
  opts.resync_period = o.resync_period;
  opts.min_watch_timeout = o.min_watch_timeout;
  return opts;
}

// How long the thread waits for the informers' first list before looking again.
constexpr std::chrono::milliseconds kSyncPoll{50};

}  // namespace

QueueWatch::QueueWatch(kube::KubeClient& client, Extender& extender, std::shared_ptr<spdlog::logger> logger,
                       QueueWatchOptions options)
    : client_(client),
      extender_(extender),
      logger_(std::move(logger)),
      options_(std::move(options)),
      queues_(client, Options(kGpuQueues, options_), [](const kube::Json& j) { return DecodeGpuQueue(j); }),
      namespaces_(client, Options(kube::resources::kNamespaces, options_),
                  [](const kube::Json& j) { return DecodeNamespace(j); }) {
  auto dirty = [this](const auto&...) { MarkDirty(); };
  queues_.AddHandlers({.on_add = dirty, .on_update = dirty, .on_delete = dirty});
  namespaces_.AddHandlers({.on_add = dirty, .on_update = dirty, .on_delete = dirty});
}

QueueWatch::~QueueWatch() { Stop(); }

void QueueWatch::MarkDirty() {
  {
    std::lock_guard lock(mu_);
    dirty_ = true;
  }
  cv_.notify_all();
}

void QueueWatch::Start() {
  // Decided before Start returns, so Synced() never passes on a CRD that is there.
  auto probe = client_.List(kGpuQueues, "", {.limit = 1});
  if (!probe.ok() && IsNotFound(probe.status())) {
    crd_missing_ = true;
    PHX_LOG_INFO(logger_, "GpuQueue CRD not installed: no team queues; watching for it",
                 kv("resource", "gpuqueues.phalanx.io"));
  } else {
    StartInformers();
  }
  thread_ = std::thread([this] { Run(); });
}

void QueueWatch::StartInformers() {
  informers_started_ = true;
  queues_.Start();
  if (options_.watch_namespaces) namespaces_.Start();
}

bool QueueWatch::InformersSynced() const {
  return queues_.HasSynced() && (!options_.watch_namespaces || namespaces_.HasSynced());
}

void QueueWatch::Run() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    if (!informers_started_) {
      if (cv_.wait_for(lock, options_.crd_poll_period, [this] { return stopping_; })) return;
      lock.unlock();
      auto probe = client_.List(kGpuQueues, "", {.limit = 1});
      if (probe.ok() || !IsNotFound(probe.status())) {
        PHX_LOG_INFO(logger_, "GpuQueue CRD installed: watching GpuQueues");
        StartInformers();
      }
      lock.lock();
      continue;
    }
    if (!InformersSynced()) {
      cv_.wait_for(lock, kSyncPoll, [this] { return stopping_; });
      continue;
    }
    if (dirty_ || !applied_) {
      dirty_ = false;
      lock.unlock();
      Apply();
      lock.lock();
      crd_missing_ = false;
      continue;
    }
    cv_.wait(lock, [this] { return stopping_ || dirty_; });
  }
}

void QueueWatch::Warn(const GpuQueueInfo* about, const std::string& message) {
  PHX_LOG_WARN(logger_, "GpuQueue not applied", kv("queue", about ? about->name : std::string()), kv("err", message));
  EventSink* events = events_.load();
  if (events == nullptr || about == nullptr) return;
  EventObject regarding{"phalanx.io/v1alpha1", "GpuQueue", "", about->name, about->uid};
  events->Record(regarding, "Warning", "InvalidGpuQueue", "Validating", message + "; the queue's last valid version stays in force");
}

void QueueWatch::Apply() {
  std::vector<GpuQueueInfo> in_force;
  std::map<std::string, const GpuQueueInfo*> listed;
  const auto objects = queues_.List();
  for (const auto& q : objects) listed.emplace(q->name, q.get());
  for (const auto& [name, q] : listed) {
    if (!q->error.empty()) {
      if (warned_[name] != q->error) Warn(q, q->error);
      warned_[name] = q->error;
    } else {
      warned_.erase(name);
      last_valid_[name] = *q;
    }
  }
  std::erase_if(last_valid_, [&](const auto& e) { return !listed.contains(e.first); });
  std::erase_if(warned_, [&](const auto& e) { return !listed.contains(e.first); });
  for (const auto& [name, q] : last_valid_) in_force.push_back(q);

  std::vector<NamespaceInfo> namespaces;
  if (options_.watch_namespaces) {
    for (const auto& ns : namespaces_.List()) namespaces.push_back(*ns);
  }
  Status st = OkStatus();
  auto assigned = AssignQueues(in_force, namespaces, options_.base);
  if (assigned.ok()) {
    const size_t queues = assigned->config.queues.size();
    st = extender_.SetQueues(std::move(*assigned));
    if (st.ok() && !applied_) PHX_LOG_INFO(logger_, "Team queues applied", kv("queues", queues));
  } else {
    st = assigned.status();
  }
  if (!st.ok()) {
    const std::string message(st.message());
    if (message != set_error_warned_) {
      // The queue the error names, when it names one ("GpuQueue team-b: spec.parent: ...").
      const GpuQueueInfo* about = nullptr;
      for (const auto& [name, q] : listed) {
        if (message.rfind("GpuQueue " + name + ":", 0) == 0) about = q;
      }
      Warn(about, "GpuQueues not applied (the queues in force are unchanged): " + message);
    }
    set_error_warned_ = message;
  } else {
    set_error_warned_.clear();
  }
  {
    std::lock_guard lock(set_error_mu_);
    set_error_ = set_error_warned_;
  }
  applied_ = true;
}

void QueueWatch::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (informers_started_) {
    namespaces_.Stop();
    queues_.Stop();
  }
}

std::vector<std::string> QueueWatch::Notes() const {
  std::vector<std::string> out;
  if (crd_missing_) out.push_back("GpuQueue CRD not installed: no team queues");
  if (!crd_missing_ && !options_.watch_namespaces) {
    out.push_back("not allowed to watch namespaces: GpuQueue namespaceSelector selects nothing");
  }
  return out;
}

}  // namespace phalanx::extender
