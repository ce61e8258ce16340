// Runs the real phalanx-device-plugin binary as a child process for integration tests:
// fork/exec with extra environment, stderr captured to a file, SIGTERM and exit status.
// Also a minimal blocking HTTP GET for /readyz and /metrics. Header-only test code.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace phalanx::device_plugin::testing {

inline constexpr std::chrono::seconds kDeadline{20};  // only catches hangs

// Polls `cond` every few ms until true or the deadline (a polling interval, not a timing assumption).
inline bool WaitUntil(const std::function<bool()>& cond, std::chrono::milliseconds deadline = kDeadline) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  while (!cond()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class DaemonProcess {
 public:
  DaemonProcess(std::vector<std::string> args, std::map<std::string, std::string> env, std::string log_path)
      : log_path_(std::move(log_path)) {
    pid_ = ::fork();
    if (pid_ == 0) {
      int fd = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 2);
      ::dup2(fd, 1);
      for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
      std::vector<char*> argv;
      std::string bin = PHALANX_DEVICE_PLUGIN_BINARY;
      argv.push_back(bin.data());
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(bin.c_str(), argv.data());
      std::_Exit(127);
    }
  }
  ~DaemonProcess() {
    if (pid_ > 0 && !exited_) {
      ::kill(pid_, SIGKILL);
      int st = 0;
      ::waitpid(pid_, &st, 0);
    }
  }

  std::string log() const { return ReadFile(log_path_); }
  void Signal(int sig) { ::kill(pid_, sig); }

  // The exit code once the process ended within `timeout` (-1 for a signal), or nullopt.
  std::optional<int> WaitExit(std::chrono::milliseconds timeout = kDeadline) {
    if (exited_) return code_;
    const bool done = WaitUntil([&] {
      int st = 0;
      pid_t r = ::waitpid(pid_, &st, WNOHANG);
      if (r == pid_) {
        exited_ = true;
        code_ = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
      }
      return exited_;
    }, timeout);
    return done ? std::optional<int>(code_) : std::nullopt;
  }
  bool running() {
    if (exited_) return false;
    int st = 0;
    if (::waitpid(pid_, &st, WNOHANG) == pid_) {
      exited_ = true;
      code_ = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    }
    return !exited_;
  }

  // The metrics port, from the "Started HTTP server address=127.0.0.1:PORT" log line.
  int MetricsPort() {
    int port = 0;
    WaitUntil([&] {
      std::smatch m;
      std::string l = log();
      if (std::regex_search(l, m, std::regex("Started HTTP server address=[0-9.]+:([0-9]+)"))) {
        port = std::stoi(m[1]);
      }
      return port != 0 || !running();
    });
    return port;
  }

 private:
  std::string log_path_;
  pid_t pid_ = -1;
  bool exited_ = false;
  int code_ = -1;
};

// GET http://127.0.0.1:port/path; returns "<status> <body>" or "" on connection failure.
inline std::string HttpGet(int port, const std::string& path) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return "";
  }
  std::string req = "GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  if (::write(fd, req.data(), req.size()) < 0) {
    ::close(fd);
    return "";
  }
  std::string resp;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof(buf))) > 0) resp.append(buf, static_cast<size_t>(n));
  ::close(fd);
  if (resp.size() < 12) return "";
  auto body = resp.find("\r\n\r\n");
  return resp.substr(9, 3) + " " + (body == std::string::npos ? "" : resp.substr(body + 4));
}

}  // namespace phalanx::device_plugin::testing
