// Process: a child process for end-to-end tests, in its own process group so that stopping it
// also stops anything it started. stdout/stderr go to files (kept for failure messages). The
// destructor stops it (SIGTERM, then SIGKILL after the grace period), and the child is killed if
// the test process dies first (PR_SET_PDEATHSIG), so no daemon outlives a crashed test.
// Thread-compatible: one owner.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/base/result.h"

namespace phalanx::e2e {

struct ProcessOptions {
  std::string name;    // for messages and log file names
  std::string binary;  // absolute path
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;  // added to (or replacing in) ours
  std::string log_dir;  // <log_dir>/<name>.out and .err (appended: restarts keep history)
};

class Process {
 public:
  static Result<std::unique_ptr<Process>> Start(ProcessOptions options);
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  const std::string& name() const { return options_.name; }
  pid_t pid() const { return pid_; }
  // Still running (reaps it when it exited).
  bool Running();
  // Its exit status once it exited: the code, or 128 + signal.
  std::optional<int> exit_status();
  // SIGTERM to the group, wait up to `grace`, then SIGKILL. Returns the exit status.
  int Stop(std::chrono::milliseconds grace = std::chrono::seconds(10));
  // SIGKILL to the group (a crash), waits for it.
  int Kill();
  // Sends a signal to the process itself (SIGHUP to reload, ...).
  void Signal(int signo);

  std::string stdout_path() const { return options_.log_dir + "/" + options_.name + ".out"; }
  std::string stderr_path() const { return options_.log_dir + "/" + options_.name + ".err"; }
  // The last `bytes` of its stderr and stdout, for assertion messages.
  std::string LogTail(size_t bytes = 4000) const;

 private:
  explicit Process(ProcessOptions options) : options_(std::move(options)) {}
  int WaitBlocking();

  ProcessOptions options_;
  pid_t pid_ = -1;
  std::optional<int> exit_status_;
};

}  // namespace phalanx::e2e
