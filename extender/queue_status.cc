#include "extender/queue_status.h"

#include "core/log/log.h"
#include "extender/queue_watch.h"

namespace phalanx::extender {

std::vector<QueueStatusPlan::Write> QueueStatusPlan::Due(const std::vector<QueueStatusInfo>& now_status,
                                                         const std::map<std::string, int64_t>& objects,
                                                         Clock::time_point now) {
  std::vector<Write> out;
  for (const QueueStatusInfo& q : now_status) {
    auto object = objects.find(q.name);
    if (object == objects.end()) continue;
    auto last = last_.find(q.name);
    if (last != last_.end()) {
      if (last->second.status == q && last->second.generation == object->second) continue;  // unchanged
      if (now - last->second.at < min_interval_) continue;                                    // written lately
    }
    kube::Json status = QueueStatusJson(q);
    status["observedGeneration"] = object->second;
    out.push_back({q.name, kube::Json{{"status", std::move(status)}}});
  }
  std::erase_if(last_, [&](const auto& e) { return !objects.contains(e.first); });
  return out;
}

void QueueStatusPlan::Written(const std::string& name, const QueueStatusInfo& status, int64_t generation,
                              Clock::time_point at) {
  last_[name] = Last{status, generation, at};
}

QueueStatusWriter::QueueStatusWriter(kube::KubeClient& write_client,
                                     std::function<std::vector<QueueStatusInfo>()> statuses,
                                     std::function<std::map<std::string, int64_t>()> objects,
                                     std::function<bool()> leading, std::shared_ptr<spdlog::logger> logger,
                                     QueueStatusWriterOptions options)
    : client_(write_client),
      statuses_(std::move(statuses)),
      objects_(std::move(objects)),
      leading_(std::move(leading)),
      logger_(std::move(logger)),
      options_(options),
      plan_(options.min_interval) {}

QueueStatusWriter::~QueueStatusWriter() { Stop(); }

void QueueStatusWriter::Start() { thread_ = std::thread([this] { Run(); }); }

void QueueStatusWriter::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void QueueStatusWriter::Run() {
  std::unique_lock lock(mu_);
  while (!cv_.wait_for(lock, options_.period, [this] { return stopping_; })) {
    lock.unlock();
    if (leading_()) Once();
    lock.lock();
  }
}

void QueueStatusWriter::Once() {
  const std::vector<QueueStatusInfo> statuses = statuses_();
  if (statuses.empty()) return;
  const std::map<std::string, int64_t> objects = objects_();
  const auto now = QueueStatusPlan::Clock::now();
  for (QueueStatusPlan::Write& w : plan_.Due(statuses, objects, now)) {
    auto r = client_.Patch(kGpuQueues, "", w.name, kube::PatchType::kMerge, w.patch, {.subresource = "status"});
    if (!r.ok()) {
      PHX_LOG_WARN(logger_, "GpuQueue status not written", kv("queue", w.name), kv("err", r.status().message()));
      continue;
    }
    writes_++;
    for (const QueueStatusInfo& q : statuses) {
      if (q.name == w.name) plan_.Written(w.name, q, objects.at(w.name), now);
    }
  }
}

}  // namespace phalanx::extender
