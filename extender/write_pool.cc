#include "extender/write_pool.h"

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
  for (std::thread& t : threads_) t.join();
}

void WritePool::Push(std::vector<Task> tasks, WriteLane lane) {
  {
    std::lock_guard lock(mu_);
    auto& queue = lane == WriteLane::kBind ? bind_ : bulk_;
    for (Task& t : tasks) queue.push_back(std::move(t));
  }
  cv_.notify_all();  // not _one: the kBind-only thread cannot take a kBulk task
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

void WritePool::Loop(bool bind_only) {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !bind_.empty() || (!bind_only && !bulk_.empty()); });
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
