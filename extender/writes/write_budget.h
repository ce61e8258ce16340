// WriteBudget: the extender's write QPS/burst (--write-qps, --write-burst), separate from its
// read client's, as a token bucket with two lanes: a kBind waiter takes the next token before
// any kBulk waiter, so a single-pod bind waits at most one token behind a gang's fan-out
// (a plain reservation bucket would queue it behind every write already waiting).
// Thread-safe.
#pragma once

#include <condition_variable>
#include <mutex>
#include <optional>

#include "extender/writes/write_context.h"

namespace phalanx::extender {

class WriteBudget {
 public:
  // qps <= 0: unlimited.
  WriteBudget(double qps, int burst);

  // Blocks until a token is taken for `lane`; false (nothing taken) once `deadline` passes.
  bool Acquire(WriteLane lane, std::optional<WriteClock::time_point> deadline = std::nullopt);

 private:
  void Refill(WriteClock::time_point now);  // mu_ held

  const double qps_;
  const double burst_;
  std::mutex mu_;
  std::condition_variable cv_;
  double tokens_;                 // guarded by mu_
  WriteClock::time_point last_;   // guarded by mu_: when tokens_ was last refilled
  int bind_waiting_ = 0;          // guarded by mu_
};

}  // namespace phalanx::extender
