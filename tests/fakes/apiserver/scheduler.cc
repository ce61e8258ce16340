#include "tests/fakes/apiserver/scheduler.h"

namespace phalanx::fakes::apiserver {

Scheduler::Scheduler() : thread_([this] { Loop(); }) {}

Scheduler::~Scheduler() { Stop(); }

void Scheduler::RunAfter(std::chrono::steady_clock::duration delay, std::function<void()> callback) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    queue_.emplace(std::chrono::steady_clock::now() + delay, std::move(callback));
  }
  wake_.notify_one();
}

void Scheduler::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

void Scheduler::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    if (queue_.empty()) {
      wake_.wait(lock);
      continue;
    }
    const auto due = queue_.begin()->first;
    if (std::chrono::steady_clock::now() < due) {
      wake_.wait_until(lock, due);
      continue;
    }
    auto callback = std::move(queue_.begin()->second);
    queue_.erase(queue_.begin());
    lock.unlock();
    callback();
    lock.lock();
  }
  queue_.clear();
}

}  // namespace phalanx::fakes::apiserver
