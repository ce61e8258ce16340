// PollUntil: waits for a condition by re-checking it, never by sleeping a guessed time. The
// deadline only catches hangs: set it at least 10x the expected time (2 shared cores).
#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace phalanx::e2e {

inline constexpr std::chrono::milliseconds kHangDeadline{60000};

inline bool PollUntil(const std::function<bool()>& condition,
                      std::chrono::milliseconds deadline = kHangDeadline,
                      std::chrono::milliseconds interval = std::chrono::milliseconds(20)) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  while (std::chrono::steady_clock::now() < end) {
    if (condition()) return true;
    std::this_thread::sleep_for(interval);
  }
  return condition();
}

}  // namespace phalanx::e2e
