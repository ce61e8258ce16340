// Scheduler: one background thread running callbacks at given times (delayed replies, watch
// timeouts, bookmarks, the simulated kubelet's final pod deletes). Callbacks run one at a time on
// that thread and must not block for long.
// Thread-safe. Stop() (also run by the destructor) drops callbacks not yet due and joins.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

namespace phalanx::fakes::apiserver {

class Scheduler {
 public:
  Scheduler();
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  void RunAfter(std::chrono::steady_clock::duration delay, std::function<void()> callback);
  void Stop();

 private:
  void Loop();

  std::mutex mu_;
  std::condition_variable wake_;
  std::multimap<std::chrono::steady_clock::time_point, std::function<void()>> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace phalanx::fakes::apiserver
