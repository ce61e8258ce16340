// Exponential backoff with full jitter (AWS architecture blog's "full jitter"): the n-th
// delay is uniform in [0, min(cap, base * 2^n)], never below `floor`. Pure given the
// random source, so tests pass a seeded generator. Not thread-safe.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>

namespace phalanx {

class Backoff {
 public:
  struct Options {
    std::chrono::milliseconds base{200};    // first ceiling
    std::chrono::milliseconds cap{30'000};  // largest ceiling
    std::chrono::milliseconds floor{0};     // smallest delay returned
    bool jitter = true;                     // false: deterministic base * 2^n
  };

  explicit Backoff(Options options, uint64_t seed = std::random_device{}())
      : options_(options), rng_(seed) {}

  std::chrono::milliseconds Next() {
    const int64_t base = options_.base.count();
    const int64_t cap = options_.cap.count();
    // Shift saturates at the cap long before overflow (attempt_ < 62 guard).
    int64_t ceiling = attempt_ >= 40 ? cap : std::min<int64_t>(cap, base << attempt_);
    ++attempt_;
    int64_t delay = ceiling;
    if (options_.jitter && ceiling > 0) {
      std::uniform_int_distribution<int64_t> dist(0, ceiling);
      delay = dist(rng_);
    }
    return std::chrono::milliseconds(std::max<int64_t>(delay, options_.floor.count()));
  }

  void Reset() { attempt_ = 0; }
  int attempts() const { return attempt_; }

 private:
  Options options_;
  std::mt19937_64 rng_;
  int attempt_ = 0;
};

}  // namespace phalanx
