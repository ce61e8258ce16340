// IoWorker: one thread that runs API-server writes in submission order, so the ledger
// lock is never held across a network call and io threads never block. Tasks run
// after Submit returns; Drain waits until everything submitted so far has run.
// Thread-safe.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace phalanx::extender {

class IoWorker {
 public:
  IoWorker();
  ~IoWorker();  // runs what is queued, then joins
  IoWorker(const IoWorker&) = delete;
  IoWorker& operator=(const IoWorker&) = delete;

  void Submit(std::function<void()> task);
  void Drain();

 private:
  void Loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable idle_cv_;
  std::deque<std::function<void()>> tasks_;  // guarded by mu_
  bool running_task_ = false;                // guarded by mu_
  bool stop_ = false;                        // guarded by mu_
  std::thread thread_;
};

}  // namespace phalanx::extender
