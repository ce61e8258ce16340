#include "core/metrics/gauge.h"

#include <limits>
#include <utility>

namespace phalanx::metrics {

void Gauge::SetCallback(std::function<double()> callback) {
  std::lock_guard<std::mutex> lock(callback_mu_);
  callback_ = std::move(callback);
  has_callback_.store(static_cast<bool>(callback_), std::memory_order_release);
}

void Gauge::ClearCallback() {
  std::lock_guard<std::mutex> lock(callback_mu_);
  callback_ = nullptr;
  has_callback_.store(false, std::memory_order_release);
}

double Gauge::Value() const {
  if (has_callback_.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(callback_mu_);
    if (callback_) {
      // The scrape must not unwind into the HTTP layer; NaN is the visible report of a
      // failing callback (a gauge cannot carry an error message).
      try {
        return callback_();
      } catch (...) {
        return std::numeric_limits<double>::quiet_NaN();
      }
    }
  }
  return value_.load(std::memory_order_relaxed);
}

}  // namespace phalanx::metrics
