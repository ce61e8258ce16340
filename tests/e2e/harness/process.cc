#include "tests/e2e/harness/process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

extern char** environ;

namespace phalanx::e2e {
namespace {

int DecodeWaitStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

std::string Tail(const std::string& path, size_t bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  in.seekg(0, std::ios::end);
  const auto size = static_cast<size_t>(in.tellg());
  const size_t from = size > bytes ? size - bytes : 0;
  in.seekg(static_cast<std::streamoff>(from));
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace

Result<std::unique_ptr<Process>> Process::Start(ProcessOptions options) {
  std::unique_ptr<Process> process(new Process(std::move(options)));
  const ProcessOptions& o = process->options_;

  // Everything the child needs is built before fork: after it only async-signal-safe calls.
  std::vector<std::string> argv_storage;
  argv_storage.push_back(o.binary);
  for (const auto& a : o.args) argv_storage.push_back(a);
  std::vector<char*> argv;
  for (auto& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);

  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string kv(*e);
    const auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : o.env) env[k] = v;
  std::vector<std::string> env_storage;
  for (const auto& [k, v] : env) env_storage.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& e : env_storage) envp.push_back(e.data());
  envp.push_back(nullptr);

  const std::string out_path = process->stdout_path(), err_path = process->stderr_path();
  const int out_fd = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  const int err_fd = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (out_fd < 0 || err_fd < 0) {
    if (out_fd >= 0) ::close(out_fd);
    if (err_fd >= 0) ::close(err_fd);
    return InternalError("cannot open log files under " + o.log_dir + ": " + std::strerror(errno));
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(out_fd);
    ::close(err_fd);
    return InternalError(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the test already died
    ::dup2(out_fd, STDOUT_FILENO);
    ::dup2(err_fd, STDERR_FILENO);
    const int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
    // Unblock every signal: the test's threads may have masked some (ShutdownSignal does).
    sigset_t all;
    sigemptyset(&all);
    ::sigprocmask(SIG_SETMASK, &all, nullptr);
    ::execve(argv[0], argv.data(), envp.data());
    const char msg[] = "exec failed\n";
    (void)!::write(STDERR_FILENO, msg, sizeof(msg) - 1);
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also from here: no race with an early Stop()
  ::close(out_fd);
  ::close(err_fd);
  process->pid_ = pid;
  return process;
}

Process::~Process() {
  if (pid_ > 0 && !exit_status_) Stop(std::chrono::seconds(5));
}

bool Process::Running() { return !exit_status().has_value(); }

std::optional<int> Process::exit_status() {
  if (exit_status_ || pid_ <= 0) return exit_status_;
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) exit_status_ = DecodeWaitStatus(status);
  return exit_status_;
}

int Process::WaitBlocking() {
  if (exit_status_) return *exit_status_;
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  exit_status_ = DecodeWaitStatus(status);
  ::kill(-pid_, SIGKILL);  // leftovers of its group, if any
  return *exit_status_;
}

int Process::Stop(std::chrono::milliseconds grace) {
  if (pid_ <= 0) return -1;
  if (exit_status()) return *exit_status_;
  ::kill(-pid_, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (std::chrono::steady_clock::now() < deadline) {
    if (exit_status()) {
      ::kill(-pid_, SIGKILL);
      return *exit_status_;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ::kill(-pid_, SIGKILL);
  return WaitBlocking();
}

int Process::Kill() {
  if (pid_ <= 0) return -1;
  if (exit_status()) return *exit_status_;
  ::kill(-pid_, SIGKILL);
  return WaitBlocking();
}

void Process::Signal(int signo) {
  if (pid_ > 0 && !exit_status()) ::kill(pid_, signo);
}

std::string Process::LogTail(size_t bytes) const {
  return "--- " + options_.name + " stderr ---\n" + Tail(stderr_path(), bytes) + "\n--- " +
         options_.name + " stdout ---\n" + Tail(stdout_path(), bytes);
}

}  // namespace phalanx::e2e
