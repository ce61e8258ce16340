#include "core/kube/work_queue.h"

#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

namespace phalanx::kube {

WorkQueue::WorkQueue(WorkQueueOptions options, const Clock* clock)
    : options_(std::move(options)),
      clock_(clock ? clock : &RealClock::Instance()),
      bucket_(options_.qps, options_.burst, *clock_) {}

WorkQueue::~WorkQueue() { ShutDown(); }

void WorkQueue::AddLocked(const std::string& key) {
  if (shutting_down_ || dirty_.count(key)) return;
  dirty_.insert(key);
  if (processing_.count(key)) return;  // queued again by Done()
  queue_.push_back(key);
  cv_.notify_one();
}

void WorkQueue::Add(const std::string& key) {
  std::lock_guard lock(mu_);
  AddLocked(key);
}

void WorkQueue::AddAfter(const std::string& key, Duration delay) {
  std::lock_guard lock(mu_);
  if (shutting_down_) return;
  if (delay <= Duration::zero()) {
    AddLocked(key);
    return;
  }
  delayed_.emplace(clock_->Now() + delay, key);
  cv_.notify_all();  // a waiting Get() may need an earlier wake-up
}

Duration WorkQueue::NextDelay(const std::string& key) {
  int failures;
  {
    std::lock_guard lock(mu_);
    failures = failures_[key]++;
  }
  const int64_t base = options_.base_delay.count();
  const int64_t cap = options_.max_delay.count();
  const int64_t item = failures >= 40 ? cap : std::min<int64_t>(cap, base << failures);
  const Duration overall = bucket_.Reserve();
  return std::max<Duration>(std::chrono::milliseconds(item), overall);
}

void WorkQueue::AddRateLimited(const std::string& key) { AddAfter(key, NextDelay(key)); }

void WorkQueue::Forget(const std::string& key) {
  std::lock_guard lock(mu_);
  failures_.erase(key);
}

int WorkQueue::NumRequeues(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = failures_.find(key);
  return it == failures_.end() ? 0 : it->second;
}

void WorkQueue::PromoteReadyLocked() {
  const MonotonicTime now = clock_->Now();
  while (!delayed_.empty() && delayed_.begin()->first <= now) {
    std::string key = std::move(delayed_.begin()->second);
    delayed_.erase(delayed_.begin());
    AddLocked(key);
  }
}

std::optional<std::string> WorkQueue::Get() {
  std::unique_lock lock(mu_);
  while (true) {
    if (shutting_down_) return std::nullopt;
    PromoteReadyLocked();
    if (!queue_.empty()) break;
    if (delayed_.empty()) {
      cv_.wait(lock);
    } else {
      const Duration until = delayed_.begin()->first - clock_->Now();
      cv_.wait_for(lock, std::min<Duration>(until, std::chrono::milliseconds(50)));
    }
  }
  std::string key = std::move(queue_.front());
  queue_.pop_front();
  processing_.insert(key);
  dirty_.erase(key);
  return key;
}

void WorkQueue::Done(const std::string& key) {
  std::lock_guard lock(mu_);
  processing_.erase(key);
  if (dirty_.count(key) && !shutting_down_) {
    queue_.push_back(key);
    cv_.notify_one();
  }
}

void WorkQueue::ShutDown() {
  std::lock_guard lock(mu_);
  shutting_down_ = true;
  cv_.notify_all();
}

bool WorkQueue::ShuttingDown() const {
  std::lock_guard lock(mu_);
  return shutting_down_;
}

size_t WorkQueue::Len() const {
  std::lock_guard lock(mu_);
  return queue_.size();
}

void WorkQueue::Run(int workers, const std::function<Status(const std::string& key)>& reconcile) {
  std::vector<std::thread> threads;
  for (int i = 0; i < std::max(1, workers); ++i) {
    threads.emplace_back([this, &reconcile] {
      while (auto key = Get()) {
        Status s = reconcile(*key);
        if (s.ok()) {
          Forget(*key);
        } else {
          spdlog::debug("{}: {} failed ({}), requeue #{}", options_.name, *key, s.message(), NumRequeues(*key) + 1);
          AddRateLimited(*key);
        }
        Done(*key);
      }
    });
  }
  for (auto& t : threads) t.join();
}

}  // namespace phalanx::kube
