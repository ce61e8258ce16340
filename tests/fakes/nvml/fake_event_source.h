// FakeEventSource: lines of injected NVML events read from the fifo or regular file named
// by FAKE_NVML_EVENTS, with a timeout and without busy waiting.
//
// A fifo is opened O_RDWR so that it never reports end-of-file (or POLLHUP) when a
// writer closes: the fake keeps waiting for the next writer. A regular file is read from
// the start and then followed: an inotify watch (set before the first read, so no append
// is missed) wakes the reader when it grows. Lines are '\n'-terminated; a partial line
// waits for the rest.
//
// Thread-safety: NextLine() serialises callers on an internal mutex (a second waiter
// waits for the first, which is fine for a test double).
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "core/base/result.h"

namespace phalanx::fake_nvml {

class FakeEventSource {
 public:
  // Opens `path` (fifo or regular file). Errors: NotFound/FailedPrecondition with errno text.
  static Result<std::unique_ptr<FakeEventSource>> Open(const std::string& path);
  ~FakeEventSource();
  FakeEventSource(const FakeEventSource&) = delete;
  FakeEventSource& operator=(const FakeEventSource&) = delete;

  const std::string& path() const { return path_; }

  // The next complete line (without '\n'), or nullopt when none arrived within `timeout`.
  std::optional<std::string> NextLine(std::chrono::milliseconds timeout);

 private:
  FakeEventSource(std::string path, int fd, int inotify_fd, bool fifo);
  std::optional<std::string> TakeLine();
  bool ReadAvailable();  // appends what can be read now; false on EOF/nothing

  std::mutex mu_;
  std::string path_;
  int fd_;
  int inotify_fd_;  // -1 for fifos
  bool fifo_;
  std::string buffer_;
};

}  // namespace phalanx::fake_nvml
