// Counter: a monotonically increasing value (Prometheus "counter").
//
// Invariant: the value never decreases; Add() ignores negative and NaN deltas instead of
// corrupting the series (a decreasing counter reads as a process restart to Prometheus).
// Thread-safe and lock-free: Inc() is a single relaxed fetch_add. Whole-number deltas go
// to an integer cell so counts stay exact; fractional deltas go to a double cell updated
// with a CAS loop (the split mirrors client_golang's valInt/valBits).
// Counters are owned by their Family and live as long as the Registry.
#pragma once

#include <atomic>
#include <cmath>
#include <cstdint>

namespace phalanx::metrics {

class Counter {
 public:
  Counter() = default;
  Counter(const Counter&) = delete;
  Counter& operator=(const Counter&) = delete;

  void Inc() { whole_.fetch_add(1, std::memory_order_relaxed); }

  // Adds `delta` (>= 0). Negative or NaN deltas are ignored (see file comment).
  void Add(double delta) {
    if (!(delta >= 0.0)) return;
    // 2^64 as a double: below it the conversion to uint64_t is exact for whole numbers.
    constexpr double kTwoTo64 = 18446744073709551616.0;
    if (delta < kTwoTo64 && std::floor(delta) == delta) {
      whole_.fetch_add(static_cast<uint64_t>(delta), std::memory_order_relaxed);
    } else {
      fraction_.fetch_add(delta, std::memory_order_relaxed);
    }
  }

  double Value() const {
    return static_cast<double>(whole_.load(std::memory_order_relaxed)) +
           fraction_.load(std::memory_order_relaxed);
  }

 private:
  static_assert(std::atomic<double>::is_always_lock_free);
  std::atomic<uint64_t> whole_{0};
  std::atomic<double> fraction_{0.0};
};

}  // namespace phalanx::metrics
