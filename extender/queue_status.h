// GpuQueue status (docs/user-guide.md §7): the active extender writes each queue's usage,
// borrowed and lent GPUs per pool, pending gangs and GPUs and fair share through the
// status subresource (a merge patch of `status`), through the budgeted write client.
// Rate-limited: a queue's status is written only when it changed, and at most once per
// `min_interval`; a queue without an object (deleted meanwhile) is skipped.
//
// QueueStatusPlan is the pure decision (tests drive it with their own clock);
// QueueStatusWriter runs it on its own thread every `period` while this replica leads.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

#include "core/kube/client.h"
#include "extender/queue_sync.h"

namespace phalanx::extender {

class QueueStatusPlan {
 public:
  using Clock = std::chrono::steady_clock;
  explicit QueueStatusPlan(std::chrono::milliseconds min_interval) : min_interval_(min_interval) {}
  struct Write {
    std::string name;
    kube::Json patch;  // {"status": {...}}
  };
  // `objects`: GpuQueue name -> metadata.generation (queues without an object are skipped).
  std::vector<Write> Due(const std::vector<QueueStatusInfo>& now_status, const std::map<std::string, int64_t>& objects,
                         Clock::time_point now);
  // After a write: remember what the object now says (a failed write is retried when due).
  void Written(const std::string& name, const QueueStatusInfo& status, int64_t generation, Clock::time_point at);

 private:
  struct Last {
    QueueStatusInfo status;
    int64_t generation = 0;
    Clock::time_point at{};
  };
  std::chrono::milliseconds min_interval_;
  std::map<std::string, Last> last_;
};

struct QueueStatusWriterOptions {
  std::chrono::milliseconds period{1000};         // how often the thread looks
  std::chrono::milliseconds min_interval{10'000};  // per queue, between writes
};

class QueueStatusWriter {
 public:
  // `statuses`: the extender's queue standing; `objects`: GpuQueue name -> generation;
  // `leading`: only the active extender writes.
  QueueStatusWriter(kube::KubeClient& write_client, std::function<std::vector<QueueStatusInfo>()> statuses,
                    std::function<std::map<std::string, int64_t>()> objects, std::function<bool()> leading,
                    std::shared_ptr<spdlog::logger> logger, QueueStatusWriterOptions options = {});
  ~QueueStatusWriter();
  QueueStatusWriter(const QueueStatusWriter&) = delete;
  QueueStatusWriter& operator=(const QueueStatusWriter&) = delete;
  void Start();
  void Stop();
  uint64_t writes() const { return writes_; }

 private:
  void Run();
  void Once();

  kube::KubeClient& client_;
  std::function<std::vector<QueueStatusInfo>()> statuses_;
  std::function<std::map<std::string, int64_t>()> objects_;
  std::function<bool()> leading_;
  std::shared_ptr<spdlog::logger> logger_;
  const QueueStatusWriterOptions options_;
  QueueStatusPlan plan_;
  std::atomic<uint64_t> writes_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace phalanx::extender
