#include "extender/writes/write_pool.h"

#include <algorithm>
#include <atomic>
#include <memory>

namespace phalanx::extender {

WritePool::WritePool(int threads) {
  const int n = std::max(1, threads);
  for (int i = 0; i < n; ++i) threads_.emplace_back([this, bind_only = n > 1 && i == 0] { Loop(bind_only); });
}

WritePool::~WritePool() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  bind_cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void WritePool::Push(std::vector<Task> tasks, WriteLane lane) {
  bool wake_bind_thread = false;
  size_t wake_general = 0;
  {
    std::lock_guard lock(mu_);
    auto& queue = lane == WriteLane::kBind ? bind_ : bulk_;
    for (Task& t : tasks) queue.push_back(std::move(t));
    size_t left = tasks.size();
    // A kBind task goes to the kBind-only thread when it waits (it takes nothing else);
    // everything else to as many of the other waiting threads as there are tasks.
    if (lane == WriteLane::kBind && bind_thread_idle_ && left > 0) {
      bind_thread_idle_ = false;  // woken: the next push does not count on it
      wake_bind_thread = true;
      --left;
    }
    wake_general = std::min(left, static_cast<size_t>(general_idle_));
  }
  // A notify that finds no waiter (two pushes counted the same idle thread) is not lost
  // work: then every thread is awake, and each takes tasks until the queues are empty.
  if (wake_bind_thread) bind_cv_.notify_one();
  for (size_t i = 0; i < wake_general; ++i) cv_.notify_one();
}

void WritePool::Submit(Task task, WriteLane lane) {
  std::vector<Task> one;
  one.push_back(std::move(task));
  Push(std::move(one), lane);
}

void WritePool::FanOut(std::vector<Task> tasks, Task then, WriteLane lane) {
  if (tasks.empty()) {
    Submit(std::move(then), lane);
    return;
  }
  auto left = std::make_shared<std::atomic<size_t>>(tasks.size());
  auto after = std::make_shared<Task>(std::move(then));
  for (Task& t : tasks) {
    t = [task = std::move(t), left, after] {
      task();
      if (left->fetch_sub(1) == 1) (*after)();
    };
  }
  Push(std::move(tasks), lane);
}

void WritePool::Drain() {
  std::unique_lock lock(mu_);
  idle_cv_.wait(lock, [&] { return bind_.empty() && bulk_.empty() && running_ == 0; });
}

uint64_t WritePool::wakeups() const {
  std::lock_guard lock(mu_);
  return wakeups_;
}

void WritePool::Loop(bool bind_only) {
  std::unique_lock lock(mu_);
  for (;;) {
    // Waits counted as idle, so that Push wakes only threads that wait (a busy thread finds
    // the queued task itself when it comes back here).
    if (bind_only) {
      while (!stop_ && bind_.empty()) {
        bind_thread_idle_ = true;
        bind_cv_.wait(lock);
        ++wakeups_;
      }
      bind_thread_idle_ = false;
    } else {
      while (!stop_ && bind_.empty() && bulk_.empty()) {
        ++general_idle_;
        cv_.wait(lock);
        --general_idle_;
        ++wakeups_;
      }
    }
    const WriteLane lane = !bind_.empty() ? WriteLane::kBind : WriteLane::kBulk;
    auto& queue = lane == WriteLane::kBind ? bind_ : bulk_;
    if (queue.empty() || (bind_only && lane == WriteLane::kBulk)) return;  // stop_ and nothing left for us
    Task task = std::move(queue.front());
    queue.pop_front();
    ++running_;
    lock.unlock();
    {
      ScopedWriteLane scoped(lane);
      task();
    }
    lock.lock();
    --running_;
    if (running_ == 0 && bind_.empty() && bulk_.empty()) idle_cv_.notify_all();
  }
}

}  // namespace phalanx::extender
