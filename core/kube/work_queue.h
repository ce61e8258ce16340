// WorkQueue: keys to reconcile, processed by N workers (client-go's rate-limiting workqueue).
//
//  - Dedup: a key waiting in the queue is queued once however often it is added; a key added
//    while a worker processes it is queued again after Done() (never processed concurrently).
//  - AddRateLimited(key): delay = max(per-item exponential backoff base*2^failures capped at
//    max_delay, overall token bucket qps/burst) — client-go's default controller rate limiter.
//    Forget(key) resets the item's failures after a success.
//  - AddAfter(key, d): delayed add (deduplicated when it becomes ready).
//  - ShutDown(): Get() returns nullopt to every worker at once (queued and delayed keys are
//    dropped: a controller relists on restart); Run() returns after workers finish their key.
// Time comes from the injected Clock; waits for delayed items re-check it at least every
// 50 ms so a FakeClock advanced by a test is honoured. Thread-safe.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "core/base/clock.h"
#include "core/base/status.h"
#include "core/kube/rate_limiter.h"

namespace phalanx::kube {

struct WorkQueueOptions {
  std::chrono::milliseconds base_delay{5};
  std::chrono::milliseconds max_delay{1000 * 1000};
  double qps = 10;  // overall retry rate (applies to AddRateLimited only)
  int burst = 100;
  std::string name = "workqueue";
};

class WorkQueue {
 public:
  explicit WorkQueue(WorkQueueOptions options = {}, const Clock* clock = nullptr);
  ~WorkQueue();

  void Add(const std::string& key);
  void AddAfter(const std::string& key, Duration delay);
  void AddRateLimited(const std::string& key);
  void Forget(const std::string& key);
  int NumRequeues(const std::string& key) const;
  // The delay AddRateLimited would use now (and counts as a failure); exposed for tests.
  Duration NextDelay(const std::string& key);

  // Blocks for the next ready key; nullopt once shut down.
  std::optional<std::string> Get();
  // The worker finished `key`; re-queues it if it was added meanwhile.
  void Done(const std::string& key);

  void ShutDown();
  bool ShuttingDown() const;
  size_t Len() const;  // ready keys

  // Runs `workers` threads: Get -> reconcile -> (error: AddRateLimited, ok: Forget) -> Done.
  // Returns after ShutDown() once every worker finished its current key.
  void Run(int workers, const std::function<Status(const std::string& key)>& reconcile);

 private:
  void AddLocked(const std::string& key);
  void PromoteReadyLocked();

  const WorkQueueOptions options_;
  const Clock* clock_;
  TokenBucket bucket_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;
  std::unordered_set<std::string> dirty_;       // queued or to be re-queued after Done
  std::unordered_set<std::string> processing_;
  std::multimap<MonotonicTime, std::string> delayed_;
  std::unordered_map<std::string, int> failures_;
  bool shutting_down_ = false;
};

}  // namespace phalanx::kube
