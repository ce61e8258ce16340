#include "device-plugin/plugin/lock_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include <fmt/format.h>

namespace phalanx::device_plugin {

Result<std::unique_ptr<LockFile>> LockFile::Acquire(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    std::string msg = fmt::format("lock file {}: {}", path, std::strerror(err));
    return err == EACCES ? PermissionDeniedError(msg) : NotFoundError(msg);
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    char buf[32] = {};
    ssize_t n = ::pread(fd, buf, sizeof(buf) - 1, 0);
    std::string pid = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "unknown";
    while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
    ::close(fd);
    return FailedPreconditionError(fmt::format(
        "another phalanx-device-plugin (pid {}) holds {}: only one instance may run per node", pid, path));
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) == 0) {
    [[maybe_unused]] ssize_t w = ::pwrite(fd, pid.data(), pid.size(), 0);
  }
  return std::unique_ptr<LockFile>(new LockFile(fd));
}

LockFile::~LockFile() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock
}

}  // namespace phalanx::device_plugin
