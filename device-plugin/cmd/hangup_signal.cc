#include "device-plugin/cmd/hangup_signal.h"

#include <pthread.h>
#include <signal.h>

#include <cerrno>

namespace phalanx::device_plugin {

void BlockHangupSignal() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

bool WaitForHangup(std::chrono::milliseconds timeout) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGHUP);
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(timeout).count();
  timespec ts{.tv_sec = static_cast<time_t>(ns / 1'000'000'000), .tv_nsec = static_cast<long>(ns % 1'000'000'000)};
  int r;
  do {
    r = sigtimedwait(&set, nullptr, &ts);
  } while (r < 0 && errno == EINTR);
  return r == SIGHUP;
}

}  // namespace phalanx::device_plugin
