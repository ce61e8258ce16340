// Clock: time as a dependency (abseil clock_interface.h, Envoy TimeSource).
// Monotonic time is for intervals and deadlines; system time only for display and
// for timestamps written to the API (RFC 3339). Pure logic takes `now` as a value;
// daemons take a Clock& so tests substitute FakeClock (tests/fakes/clock).
// Implementations must be thread-safe.
#pragma once

#include <chrono>

namespace phalanx {

using MonotonicTime = std::chrono::steady_clock::time_point;
using SystemTime = std::chrono::system_clock::time_point;
using Duration = std::chrono::nanoseconds;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual MonotonicTime Now() const = 0;
  virtual SystemTime WallNow() const = 0;
};

class RealClock final : public Clock {
 public:
  MonotonicTime Now() const override { return std::chrono::steady_clock::now(); }
  SystemTime WallNow() const override { return std::chrono::system_clock::now(); }
  // A process-wide instance for main.cc to pass down (stateless, so sharing is safe).
  static RealClock& Instance() {
    static RealClock clock;
    return clock;
  }
};

}  // namespace phalanx
