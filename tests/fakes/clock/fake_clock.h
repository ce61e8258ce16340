// FakeClock: a Clock that moves only when a test says so (abseil SimulatedClock).
// Thread-safe: daemons' threads may read it while the test advances it.
#pragma once

#include <mutex>

#include "core/base/clock.h"

namespace phalanx::testing {

class FakeClock final : public Clock {
 public:
  // Starts at an arbitrary, fixed point so tests are reproducible.
  FakeClock()
      : mono_(MonotonicTime(std::chrono::hours(1000))),
        wall_(SystemTime(std::chrono::seconds(1'795'000'000))) {}  // 2026-11-19T...Z

  MonotonicTime Now() const override {
    std::lock_guard lock(mu_);
    return mono_;
  }
  SystemTime WallNow() const override {
    std::lock_guard lock(mu_);
    return wall_;
  }
  void Advance(Duration d) {
    std::lock_guard lock(mu_);
    mono_ += d;
    wall_ += std::chrono::duration_cast<SystemTime::duration>(d);
  }

 private:
  mutable std::mutex mu_;
  MonotonicTime mono_;
  SystemTime wall_;
};

}  // namespace phalanx::testing
