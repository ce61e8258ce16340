#include "tests/fakes/nvml/fake_event_source.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace phalanx::fake_nvml {

Result<std::unique_ptr<FakeEventSource>> FakeEventSource::Open(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    return NotFoundError(fmt::format("FAKE_NVML_EVENTS {}: {}", path, std::strerror(errno)));
  }
  const bool fifo = S_ISFIFO(st.st_mode);
  int inotify_fd = -1;
  if (!fifo) {
    inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (inotify_fd < 0 || inotify_add_watch(inotify_fd, path.c_str(), IN_MODIFY | IN_CLOSE_WRITE) < 0) {
      const int err = errno;
      if (inotify_fd >= 0) close(inotify_fd);
      return FailedPreconditionError(
          fmt::format("FAKE_NVML_EVENTS {}: inotify: {}", path, std::strerror(err)));
    }
  }
  // O_RDWR on a fifo: we count as a writer ourselves, so the read end never sees EOF.
  const int fd = open(path.c_str(), (fifo ? O_RDWR : O_RDONLY) | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (inotify_fd >= 0) close(inotify_fd);
    return FailedPreconditionError(fmt::format("FAKE_NVML_EVENTS {}: {}", path, std::strerror(err)));
  }
  return std::unique_ptr<FakeEventSource>(new FakeEventSource(path, fd, inotify_fd, fifo));
}

FakeEventSource::FakeEventSource(std::string path, int fd, int inotify_fd, bool fifo)
    : path_(std::move(path)), fd_(fd), inotify_fd_(inotify_fd), fifo_(fifo) {}

FakeEventSource::~FakeEventSource() {
  close(fd_);
  if (inotify_fd_ >= 0) close(inotify_fd_);
}

std::optional<std::string> FakeEventSource::TakeLine() {
  const size_t end = buffer_.find('\n');
  if (end == std::string::npos) return std::nullopt;
  std::string line = buffer_.substr(0, end);
  buffer_.erase(0, end + 1);
  return line;
}

bool FakeEventSource::ReadAvailable() {
  bool got = false;
  char chunk[4096];
  for (;;) {
    const ssize_t n = read(fd_, chunk, sizeof(chunk));
    if (n > 0) {
      buffer_.append(chunk, static_cast<size_t>(n));
      got = true;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return got;  // 0 = end of a regular file, EAGAIN = fifo drained
  }
}

std::optional<std::string> FakeEventSource::NextLine(std::chrono::milliseconds timeout) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (auto line = TakeLine()) return line;
    if (ReadAvailable()) continue;

    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return std::nullopt;
    const auto remaining =
        std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
    pollfd p{fifo_ ? fd_ : inotify_fd_, POLLIN, 0};
    const int r = poll(&p, 1, static_cast<int>(std::min<long long>(remaining, 1 << 30)));
    if (r < 0 && errno != EINTR) return std::nullopt;
    if (!fifo_ && r > 0) {
      // Drain the inotify queue; the data itself is read at the top of the loop.
      char events[4096];
      while (read(inotify_fd_, events, sizeof(events)) > 0) {
      }
    }
  }
}

}  // namespace phalanx::fake_nvml
