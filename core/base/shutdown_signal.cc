// ShutdownSignal (see shutdown_signal.h). The waiter is woken for RequestShutdown() and for the
// destructor by a SIGTERM sent to the waiter thread alone (pthread_kill), with a flag saying why;
// that keeps a single wait primitive (sigwait) instead of polling.
#include "core/base/shutdown_signal.h"

#include <string.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

namespace phalanx {
namespace {

std::atomic<bool> g_installed{false};

std::string SignalName(int sig) {
  switch (sig) {
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    default: return std::to_string(sig);
  }
}

}  // namespace

ShutdownSignal::ShutdownSignal(LogSink log) : log_(std::move(log)), owner_thread_(pthread_self()) {
  if (g_installed.exchange(true)) {
    Log("Refused a second ShutdownSignal: only one may exist per process");
    std::abort();
  }
  sigemptyset(&signals_);
  sigaddset(&signals_, SIGTERM);
  sigaddset(&signals_, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals_, &previous_mask_);
  waiter_ = std::thread([this] { WaiterLoop(); });
}

ShutdownSignal::~ShutdownSignal() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_waiter_ = true;
  }
  pthread_kill(waiter_.native_handle(), SIGTERM);
  waiter_.join();
  if (runner_.joinable()) runner_.join();  // no lock needed: the waiter, its only writer, is gone
  if (pthread_equal(owner_thread_, pthread_self())) {
    pthread_sigmask(SIG_SETMASK, &previous_mask_, nullptr);
  }
  g_installed.store(false);
}

void ShutdownSignal::WaiterLoop() {
  for (;;) {
    int sig = 0;
    if (sigwait(&signals_, &sig) != 0) continue;
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_waiter_) return;
    const bool requested = request_pending_;
    request_pending_ = false;
    if (started_) {
      if (requested) continue;  // RequestShutdown() during shutdown: nothing to do
      Log("Received second signal signal=" + SignalName(sig) + ", exiting immediately");
      std::_Exit(1);
    }
    started_ = true;
    signal_number_ = requested ? 0 : sig;
    Log(requested ? std::string("Shutdown requested, shutting down")
                  : "Received signal signal=" + SignalName(sig) +
                        ", shutting down (send it again to exit immediately)");
    // The callbacks run on their own thread so that this one keeps waiting: a second signal
    // must be able to end a graceful shutdown that hangs.
    runner_ = std::thread([this, to_run = std::move(callbacks_)]() mutable {
      for (auto& callback : to_run) callback();  // no lock: callbacks may call back into us
      {
        std::lock_guard<std::mutex> done_lock(mu_);
        done_ = true;
      }
      done_cv_.notify_all();
    });
    callbacks_.clear();
  }
}

void ShutdownSignal::OnShutdown(std::function<void()> callback) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!started_) {
      callbacks_.push_back(std::move(callback));
      return;
    }
  }
  callback();
}

void ShutdownSignal::RequestShutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (started_ || request_pending_) return;
    request_pending_ = true;
  }
  pthread_kill(waiter_.native_handle(), SIGTERM);
}

void ShutdownSignal::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [&] { return done_; });
}

bool ShutdownSignal::WaitFor(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return done_cv_.wait_for(lock, timeout, [&] { return done_; });
}

bool ShutdownSignal::shutdown_started() const {
  std::lock_guard<std::mutex> lock(mu_);
  return started_;
}

int ShutdownSignal::signal_number() const {
  std::lock_guard<std::mutex> lock(mu_);
  return signal_number_;
}

void ShutdownSignal::Log(std::string_view line) const {
  if (log_) {
    log_(line);
    return;
  }
  // write(2), not stdio: unbuffered, and safe right before _Exit.
  std::string out(line);
  out.push_back('\n');
  ssize_t unused = ::write(STDERR_FILENO, out.data(), out.size());
  (void)unused;
}

}  // namespace phalanx
