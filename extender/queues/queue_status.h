// GpuQueue status (docs/user-guide.md §7): the active extender writes each queue's usage,
// borrowed and lent GPUs per pool, pending gangs and GPUs, fair share and two conditions
// through the status subresource (a merge patch of `status`), through the budgeted write
// client. Rate-limited: a queue's status is written only when it differs from what the
// object says, and at most once per `min_interval`.
//
// Conditions (metav1.Condition shape: type, status, reason, message, lastTransitionTime,
// observedGeneration); lastTransitionTime moves only when a condition's status does:
//   Active                      True: the extender enforces the queue (reason Enforced, or
//                               PreviousSpecInForce when the object's current spec, or the set
//                               of GpuQueues, does not validate and an older version is in force).
//                               False: it is not enforced (InvalidSpec: the object does not
//                               decode; QueueSetInvalid: the set does not hold together, e.g. a
//                               missing parent). A False queue's usage fields are cleared.
//   BelowNominalWithPendingWork True while gangs of the queue wait and it uses less than its
//                               nominal quota of a pool (what PhalanxQueueBelowNominalWithPendingWork
//                               alerts on); reasons PendingBelowNominal / NoPendingWork / AtNominal.
//
// QueueStatusPlan is the pure decision (tests drive it with their own clocks);
// QueueStatusWriter runs it on its own thread every `period` while this replica leads.
#pragma once

#include <atomic>
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

#include "core/base/clock.h"
#include "core/kube/client.h"
#include "extender/queues/queue_sync.h"

namespace phalanx::extender {

// Condition types and reasons (a user-visible contract: docs/user-guide.md §7).
inline constexpr std::string_view kConditionActive = "Active";
inline constexpr std::string_view kConditionBelowNominal = "BelowNominalWithPendingWork";

// The GpuQueue objects as listed, for status writing.
struct QueueObjects {
  struct Object {
    int64_t generation = 0;
    std::string error;  // GpuQueueInfo::error: the current spec does not decode ("" = valid)
  };
  std::map<std::string, Object> by_name;
  std::string set_error;  // the listed set does not validate as a whole ("" = applied)
};

class QueueStatusPlan {
 public:
  using Clock = std::chrono::steady_clock;
  explicit QueueStatusPlan(std::chrono::milliseconds min_interval) : min_interval_(min_interval) {}
  struct Write {
    std::string name;
    kube::Json patch;   // {"status": {...}}: the new status, null for fields to remove
    kube::Json status;  // the object's status once the patch is applied
  };
  // `standing`: the queues the engine enforces; `wall`: the time conditions are stamped with.
  // A queue with an object but neither standing nor an error is not applied yet: skipped.
  std::vector<Write> Due(const std::vector<QueueStatusInfo>& standing, const QueueObjects& objects,
                         Clock::time_point now, SystemTime wall);
  // What the object's status says, read before this plan ever wrote it (keeps its conditions'
  // lastTransitionTime across extender restarts and leader changes, and skips writing a status
  // that is already there). Not rate-limited.
  void Seed(const std::string& name, const kube::Json& status);
  bool Knows(const std::string& name) const { return last_.contains(name); }
  // After a successful write.
  void Written(const Write& write, Clock::time_point at);
  // After a refused or failed write: retried once `min_interval` has passed (a write the server
  // keeps refusing costs one request per interval, not one per period).
  void Failed(const std::string& name, Clock::time_point at) { last_[name].at = at; }
  // Forget everything (another replica may have written since): the next Due starts from Seed.
  void Reset() { last_.clear(); }

 private:
  struct Last {
    kube::Json status;
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
  // `statuses`: the extender's queue standing; `objects`: the GpuQueue objects as listed;
  // `leading`: only the active extender writes. `client` patches gpuqueues/status and reads a
  // GpuQueue once when the plan first meets it.
  QueueStatusWriter(kube::KubeClient& client, std::function<std::vector<QueueStatusInfo>()> statuses,
                    std::function<QueueObjects()> objects, std::function<bool()> leading,
                    std::shared_ptr<spdlog::logger> logger, QueueStatusWriterOptions options = {});
  ~QueueStatusWriter();
  QueueStatusWriter(const QueueStatusWriter&) = delete;
  QueueStatusWriter& operator=(const QueueStatusWriter&) = delete;
  void Start();
  void Stop();
  uint64_t writes() const { return writes_; }
  // One round (the thread calls it every period while leading; tests call it directly).
  void Once();

 private:
  void Run();

  kube::KubeClient& client_;
  std::function<std::vector<QueueStatusInfo>()> statuses_;
  std::function<QueueObjects()> objects_;
  std::function<bool()> leading_;
  std::shared_ptr<spdlog::logger> logger_;
  const QueueStatusWriterOptions options_;
  QueueStatusPlan plan_;  // Once's thread only
  std::atomic<uint64_t> writes_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace phalanx::extender
