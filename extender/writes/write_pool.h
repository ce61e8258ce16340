// WritePool: the threads that make the extender's API-server writes (--writers), so the ledger
// lock is never held across a network call, io threads never block, and a gang's gate lifts
// and commit go out in parallel instead of one after another.
//
// Two lanes (write_context.h): a kBind task is always taken before any kBulk task, and one
// thread takes kBind tasks only, so a single-pod bind never queues behind a gang's writes. Each
// task runs with CurrentWriteLane() = its lane. Tasks run after Submit returns, concurrently and
// in no guaranteed order; a task that needs another to finish first chains it (FanOut).
// Drain waits until everything submitted so far, and everything that submitted, has run.
// A push wakes only as many threads as it has tasks (the idle kBind thread first for a kBind
// task): waking all 32 writers per single-pod bind cost ~0.4 ms of CPU per bind and delayed
// the one that took it (bench/RESULTS.md, Extender). Thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "extender/writes/write_context.h"

namespace phalanx::extender {

class WritePool {
 public:
  using Task = std::function<void()>;

  // threads >= 2 keeps a thread for kBind; 1 runs both lanes on one thread (kBind first).
  explicit WritePool(int threads);
  ~WritePool();  // runs what is queued, then joins
  WritePool(const WritePool&) = delete;
  WritePool& operator=(const WritePool&) = delete;

  void Submit(Task task, WriteLane lane = WriteLane::kBulk);
  // Runs every task in parallel, then `then` once, on the thread that finished the last task
  // (at once, on the pool, when `tasks` is empty).
  void FanOut(std::vector<Task> tasks, Task then, WriteLane lane = WriteLane::kBulk);
  void Drain();
  int threads() const { return static_cast<int>(threads_.size()); }
  // Times a thread woke from waiting for work (tests: a push wakes only the threads it needs).
  uint64_t wakeups() const;

 private:
  void Push(std::vector<Task> tasks, WriteLane lane);
  void Loop(bool bind_only);

  mutable std::mutex mu_;
  std::condition_variable cv_;       // the threads that take both lanes wait here
  std::condition_variable bind_cv_;  // the kBind-only thread waits here
  std::condition_variable idle_cv_;
  bool bind_thread_idle_ = false;  // guarded by mu_: waiting on bind_cv_, not yet woken
  int general_idle_ = 0;           // guarded by mu_: threads waiting on cv_
  uint64_t wakeups_ = 0;           // guarded by mu_
  std::deque<Task> bind_;   // guarded by mu_
  std::deque<Task> bulk_;   // guarded by mu_
  int running_ = 0;         // guarded by mu_
  bool stop_ = false;       // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace phalanx::extender
