// Gauge: a value that goes up and down (Prometheus "gauge"), optionally computed at
// scrape time by a callback (queue depths, ledger sizes: read the source of truth
// instead of mirroring it).
//
// Thread-safe. Set/Inc/Dec/Add are lock-free (relaxed atomics; Add is a CAS loop on a
// double). A callback, once set, decides Value(); the stored value is kept but not
// reported until ClearCallback(). The callback runs on the scraping thread under a
// per-gauge mutex, so ClearCallback() waits for a running callback and no call starts
// after it returns: clear it before destroying whatever the callback reads, and don't
// hold a lock the callback takes while clearing. Gauges are owned by their Family and
// live as long as the Registry.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>

namespace phalanx::metrics {

class Gauge {
 public:
  Gauge() = default;
  Gauge(const Gauge&) = delete;
  Gauge& operator=(const Gauge&) = delete;

  void Set(double value) { value_.store(value, std::memory_order_relaxed); }
  void Add(double delta) { value_.fetch_add(delta, std::memory_order_relaxed); }
  void Sub(double delta) { value_.fetch_sub(delta, std::memory_order_relaxed); }
  void Inc() { Add(1.0); }
  void Dec() { Add(-1.0); }

  // Makes Value() return `callback()` (called at scrape time, on the scraper's thread).
  // A callback that throws reports NaN for that scrape: the scrape itself never fails.
  void SetCallback(std::function<double()> callback);
  // Back to the stored value. After it returns the old callback is never called again.
  void ClearCallback();

  double Value() const;

 private:
  static_assert(std::atomic<double>::is_always_lock_free);
  std::atomic<double> value_{0.0};
  // Lets Value() skip the mutex on gauges without a callback (the common case).
  std::atomic<bool> has_callback_{false};
  mutable std::mutex callback_mu_;
  std::function<double()> callback_;  // guarded by callback_mu_
};

}  // namespace phalanx::metrics
