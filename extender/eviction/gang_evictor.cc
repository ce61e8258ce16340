#include "extender/eviction/gang_evictor.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/kube/api_error.h"

namespace phalanx::extender {

GangEvictor::GangEvictor(ClusterWriter& writer, GangEvictorOptions options)
    : writer_(writer), options_(options), thread_([this] { Loop(); }) {}

GangEvictor::~GangEvictor() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void GangEvictor::SetReport(ReportFn report) {
  std::lock_guard lock(mu_);
  report_ = std::move(report);
}

void GangEvictor::SetOptions(GangEvictorOptions options) {
  std::lock_guard lock(mu_);
  options_ = options;
}

void GangEvictor::Submit(EvictionJob job) {
  {
    std::lock_guard lock(mu_);
    jobs_.push_back(std::move(job));
  }
  cv_.notify_all();
}

void GangEvictor::Drain() {
  std::unique_lock lock(mu_);
  idle_cv_.wait(lock, [this] { return jobs_.empty() && !busy_; });
}

bool GangEvictor::SleepFor(std::chrono::milliseconds d) {
  std::unique_lock lock(mu_);
  return !cv_.wait_for(lock, d, [this] { return stop_; });
}

void GangEvictor::Loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
    if (jobs_.empty()) return;  // stopping and nothing left
    EvictionJob job = std::move(jobs_.front());
    jobs_.pop_front();
    busy_ = true;
    lock.unlock();
    EvictionReport report = Run(job);
    lock.lock();
    ReportFn report_fn = report_;
    lock.unlock();
    if (report_fn) report_fn(report);
    lock.lock();
    busy_ = false;
    if (jobs_.empty()) idle_cv_.notify_all();
  }
}

EvictionReport GangEvictor::Run(const EvictionJob& job) {
  GangEvictorOptions opts;
  {
    std::lock_guard lock(mu_);
    opts = options_;
  }
  EvictionReport report;
  report.job = job;
  const auto deadline = std::chrono::steady_clock::now() + opts.deadline;
  const std::string reason = fmt::format("PreemptionByScheduler: {}", job.preemptor);
  size_t i = 0;
  std::string refusal;
  for (; i < job.pods.size(); ++i) {
    auto backoff = opts.initial_backoff;
    bool evicted = false;
    for (;;) {
      Status st = writer_.EvictPod(job.pods[i], reason);
      if (st.ok()) {
        evicted = true;
        break;
      }
      const bool budget = kube::IsTooManyRequests(st);
      if (!budget) report.write_errors++;
      refusal = std::string(st.message());
      if (budget && report.done.empty() && !job.others_disrupted) {
        // Nothing of the set is gone yet: give it up whole; the preemptor retries later.
        report.outcome = EvictionReport::Outcome::kRefused;
        report.message = fmt::format("eviction of {} refused, so no member of {} was evicted: {}", job.pods[i].Key(),
                                     job.group, refusal);
        return report;
      }
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline) break;
      const auto wait = std::min<std::chrono::milliseconds>(
          backoff, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now));
      if (!SleepFor(wait)) break;  // stopping: complete the gang now
      backoff = std::min(backoff * 2, opts.max_backoff);
    }
    if (!evicted) break;
    report.done.push_back(job.pods[i]);
  }
  if (i == job.pods.size()) {
    report.outcome = EvictionReport::Outcome::kEvicted;
    report.message = fmt::format("evicted {} member(s) of {} for {}", report.done.size(), job.group, job.preemptor);
    return report;
  }
  // Part of the gang is gone and the rest could not be evicted in time: a partial gang holds
  // GPUs and cannot run, so the rest is deleted as kube-scheduler deletes its own victims.
  report.outcome = EvictionReport::Outcome::kForced;
  std::vector<std::string> forced;
  for (; i < job.pods.size(); ++i) {
    Status st = writer_.DeletePod(job.pods[i], reason);
    if (!st.ok()) report.write_errors++;
    report.done.push_back(job.pods[i]);
    forced.push_back(job.pods[i].Key());
  }
  report.message = fmt::format(
      "evictions of {} refused until the deadline ({}); {} was already partly preempted, so {} deleted: {}",
      job.group, refusal, job.group, forced.size() == 1 ? "the rest was" : "the rest were",
      fmt::join(forced, ", "));
  return report;
}

}  // namespace phalanx::extender
