// LockFile: one phalanx-device-plugin per node. An exclusive flock(2) on a file in the
// kubelet directory, held for the process lifetime (released by the kernel on exit, so a
// crashed instance never leaves a stale lock). The holder's pid is written into the file
// for the error message of the next instance. Thread-compatible.
#pragma once

#include <memory>
#include <string>

#include "core/base/result.h"

namespace phalanx::device_plugin {

class LockFile {
 public:
  // FailedPrecondition "another phalanx-device-plugin (pid 123) holds <path>" when taken;
  // PermissionDenied/NotFound when the file cannot be opened.
  static Result<std::unique_ptr<LockFile>> Acquire(const std::string& path);
  ~LockFile();
  LockFile(const LockFile&) = delete;
  LockFile& operator=(const LockFile&) = delete;

 private:
  explicit LockFile(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace phalanx::device_plugin
