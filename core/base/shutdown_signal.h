// ShutdownSignal: graceful shutdown of a daemon on SIGTERM/SIGINT (Kubernetes sends SIGTERM, then
// SIGKILL after terminationGracePeriodSeconds).
//
// Construction blocks SIGTERM and SIGINT in the calling thread; threads started afterwards
// inherit the mask, so the signals reach only the dedicated waiter thread (sigwait), never an
// arbitrary thread in the middle of a lock. Construct it first thing in main(), before any
// thread exists (a thread started earlier keeps the default disposition and would be killed).
//
// The first signal, or RequestShutdown(), runs the registered callbacks once, in registration
// order, on a dedicated thread (so a callback may join threads such as HttpServer's io threads,
// and the waiter stays free to see a second signal), then releases Wait(). A second signal while shutting down logs one line and exits the process
// immediately with status 1 (std::_Exit: no destructors or atexit handlers, which could hang on
// whatever the graceful path is stuck on).
//
// At most one ShutdownSignal may exist at a time (a second one aborts with a message). The
// destructor stops the waiter and restores the constructing thread's signal mask.
// Thread-safety: all methods may be called from any thread.
#pragma once

#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

namespace phalanx {

class ShutdownSignal {
 public:
  // Receives the log lines ("Received signal signal=SIGTERM, shutting down"); null = stderr.
  using LogSink = std::function<void(std::string_view line)>;

  explicit ShutdownSignal(LogSink log = nullptr);
  ~ShutdownSignal();
  ShutdownSignal(const ShutdownSignal&) = delete;
  ShutdownSignal& operator=(const ShutdownSignal&) = delete;

  // Registers a callback for the start of shutdown. If shutdown has already started, runs it now
  // on the calling thread instead.
  void OnShutdown(std::function<void()> callback);

  // Starts shutdown as a first signal would (tests, an admin endpoint, a fatal error). Returns at
  // once; later calls are ignored (they never cause the immediate exit).
  void RequestShutdown();

  // Blocks until shutdown has started and every callback has returned.
  void Wait();
  // Wait() with a timeout; true when shutdown has completed its callbacks.
  bool WaitFor(std::chrono::milliseconds timeout);

  bool shutdown_started() const;
  // The signal that started shutdown (SIGTERM, SIGINT), or 0 (not started, or RequestShutdown).
  int signal_number() const;

 private:
  void WaiterLoop();
  void Log(std::string_view line) const;

  LogSink log_;
  sigset_t signals_;
  sigset_t previous_mask_;
  pthread_t owner_thread_;

  mutable std::mutex mu_;
  std::condition_variable done_cv_;
  std::vector<std::function<void()>> callbacks_;  // guarded by mu_
  bool stop_waiter_ = false;                      // guarded by mu_: destructor wake-up
  bool request_pending_ = false;                  // guarded by mu_: RequestShutdown wake-up
  bool started_ = false;                          // guarded by mu_
  bool done_ = false;                             // guarded by mu_: callbacks have run
  int signal_number_ = 0;                         // guarded by mu_

  std::thread runner_;  // runs the callbacks; started by the waiter under mu_
  std::thread waiter_;  // last: started after every other member is ready
};

}  // namespace phalanx
