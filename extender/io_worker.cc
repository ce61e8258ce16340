#include "extender/io_worker.h"

namespace phalanx::extender {

IoWorker::IoWorker() : thread_([this] { Loop(); }) {}

IoWorker::~IoWorker() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void IoWorker::Submit(std::function<void()> task) {
  {
    std::lock_guard lock(mu_);
    tasks_.push_back(std::move(task));
  }
  cv_.notify_one();
}

void IoWorker::Drain() {
  std::unique_lock lock(mu_);
  idle_cv_.wait(lock, [&] { return tasks_.empty() && !running_task_; });
}

void IoWorker::Loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !tasks_.empty(); });
    if (tasks_.empty()) return;  // stop_ and nothing left
    auto task = std::move(tasks_.front());
    tasks_.pop_front();
    running_task_ = true;
    lock.unlock();
    task();
    lock.lock();
    running_task_ = false;
    if (tasks_.empty()) idle_cv_.notify_all();
  }
}

}  // namespace phalanx::extender
