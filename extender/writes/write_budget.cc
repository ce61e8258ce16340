#include "extender/writes/write_budget.h"

#include <algorithm>

namespace phalanx::extender {

WriteBudget::WriteBudget(double qps, int burst)
    : qps_(qps), burst_(std::max(1, burst)), tokens_(burst_), last_(WriteClock::now()) {}

void WriteBudget::Refill(WriteClock::time_point now) {
  if (now <= last_) return;
  tokens_ = std::min(burst_, tokens_ + qps_ * std::chrono::duration<double>(now - last_).count());
  last_ = now;
}

bool WriteBudget::Acquire(WriteLane lane, std::optional<WriteClock::time_point> deadline) {
  if (qps_ <= 0) return true;
  const bool bind = lane == WriteLane::kBind;
  std::unique_lock lock(mu_);
  if (bind) ++bind_waiting_;
  for (;;) {
    const auto now = WriteClock::now();
    Refill(now);
    const bool my_turn = bind || bind_waiting_ == 0;
    if (my_turn && tokens_ >= 1) {
      tokens_ -= 1;
      if (bind && --bind_waiting_ == 0) cv_.notify_all();  // bulk waiters may go again
      return true;
    }
    if (deadline && now >= *deadline) {
      if (bind && --bind_waiting_ == 0) cv_.notify_all();
      return false;
    }
    // Until the next token (a bulk waiter behind a bind waiter is woken when it is served).
    auto wake = now + std::chrono::duration_cast<WriteClock::duration>(
                          std::chrono::duration<double>(std::max(0.0, 1 - tokens_) / qps_));
    if (deadline) wake = std::min(wake, *deadline);
    cv_.wait_until(lock, wake);
  }
}

}  // namespace phalanx::extender
