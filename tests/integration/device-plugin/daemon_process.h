// Runs the real phalanx-device-plugin binary as a child process for integration tests, on
// the tests' process runner (tests/e2e/harness/process.h): extra environment, stdout and
// stderr to files, signals and exit status.
// Also a minimal blocking HTTP GET for /readyz and /metrics. Header-only test code.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/harness/process.h"

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

// The daemon, run by the tests' process runner (e2e::Process: its own process group, stopped
// when the test ends). `log_path` names its logs: <dir>/<stem>.out and .err.
class DaemonProcess {
 public:
  DaemonProcess(std::vector<std::string> args, std::map<std::string, std::string> env, const std::string& log_path) {
    const std::filesystem::path path(log_path);
    const std::string dir = path.parent_path().string(), name = path.stem().string();
    // The runner appends to its logs: start from empty ones, as the tests read them whole.
    for (const char* ext : {".out", ".err"}) std::filesystem::remove(dir + "/" + name + ext);
    auto p = e2e::Process::Start({.name = name,
                                  .binary = PHALANX_DEVICE_PLUGIN_BINARY,
                                  .args = std::move(args),
                                  .env = {env.begin(), env.end()},
                                  .log_dir = dir});
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    if (p.ok()) process_ = std::move(*p);
  }

  std::string log() const {
    return process_ ? ReadFile(process_->stdout_path()) + ReadFile(process_->stderr_path()) : "";
  }
  void Signal(int sig) {
    if (process_) process_->Signal(sig);
  }

  // The exit status once the process ended within `timeout` (the code, or 128 + a signal),
  // or nullopt.
  std::optional<int> WaitExit(std::chrono::milliseconds timeout = kDeadline) {
    if (!process_) return std::nullopt;
    if (!WaitUntil([&] { return !process_->Running(); }, timeout)) return std::nullopt;
    return process_->exit_status();
  }
  bool running() { return process_ && process_->Running(); }

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
  std::unique_ptr<e2e::Process> process_;
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
