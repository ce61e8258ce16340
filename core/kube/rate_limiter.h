// TokenBucket: client-side QPS/burst limit (client-go's flowcontrol token bucket). Tokens refill
// at `qps` per second up to `burst`; Reserve() takes one token now and says how long the caller
// must wait before using it (a reservation, so concurrent callers queue fairly and the bucket
// can go into debt). qps <= 0 means unlimited. Thread-safe; time comes from the injected Clock.
#pragma once

#include <mutex>

#include "core/base/clock.h"

namespace phalanx::kube {

class TokenBucket {
 public:
  TokenBucket(double qps, int burst, const Clock& clock);

  Duration Reserve();
  double qps() const { return qps_; }
  int burst() const { return burst_; }

 private:
  const double qps_;
  const int burst_;
  const Clock& clock_;
  std::mutex mu_;
  double tokens_;        // may go negative: reserved future tokens
  MonotonicTime last_;   // when tokens_ was last refilled
};

}  // namespace phalanx::kube
