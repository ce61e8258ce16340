// Test harness for the real phalanx-extender binary over HTTP (embedded mode):
//   ExtenderProcess   the binary with --cluster-snapshot on e2e::Process (tests/e2e/harness)
//                     and ephemeral ports (read back from its "Serving" log line).
//   HttpConnection    a blocking HTTP/1.1 client on one keep-alive TCP connection that sends
//                     bytes exactly as given (raw fixture bodies, half bodies, garbage).
//   WaitUntil         polls a condition; deadlines only catch hangs (the machine is shared).
// Header-only test code; used by fixture_replay_test.cc and bad_input_http_test.cc.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/harness/process.h"
#include "tests/integration/extender/run_dir.h"

namespace phalanx::extender::testing {

inline constexpr std::chrono::seconds kHangDeadline{30};  // only catches hangs

inline bool WaitUntil(const std::function<bool()>& cond, std::chrono::milliseconds deadline = kHangDeadline) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  while (!cond()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // polling interval
  }
  return true;
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

// A fresh directory for one test's files, inside the process's RunDir (removed with it
// when every test passed).
inline std::string MakeTempDir(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::path(itest::RunDir()) / name;
  std::filesystem::create_directories(dir);
  return dir.string();
}

struct HttpReply {
  int status = 0;  // 0 = no reply (connection closed or failed)
  std::string headers;
  std::string body;
  bool closed = false;  // server closed the connection after this reply

  std::string Header(const std::string& name) const {
    std::regex re("\r\n" + name + ":[ \t]*([^\r\n]*)", std::regex::icase);
    std::smatch m;
    return std::regex_search(headers, m, re) ? m[1].str() : "";
  }
};

// One TCP connection to 127.0.0.1:port. Not thread-safe; one per thread.
class HttpConnection {
 public:
  explicit HttpConnection(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      ::close(fd_);
      fd_ = -1;
      return;
    }
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  ~HttpConnection() {
    if (fd_ >= 0) ::close(fd_);
  }
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  bool connected() const { return fd_ >= 0; }

  bool SendRaw(std::string_view bytes) {
    while (!bytes.empty()) {
      ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  // A request the way Go's net/http client sends it (kube-scheduler's extender client).
  static std::string Format(const std::string& method, const std::string& path, std::string_view body,
                            const std::string& content_type = "application/json") {
    std::string req = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: Go-http-client/1.1\r\n";
    if (method != "GET" || !body.empty()) {
      req += "Content-Length: " + std::to_string(body.size()) + "\r\n";
      req += "Content-Type: " + content_type + "\r\n";
    }
    req += "Accept-Encoding: gzip\r\n\r\n";
    req += body;
    return req;
  }

  HttpReply Request(const std::string& method, const std::string& path, std::string_view body = {},
                    std::chrono::milliseconds timeout = kHangDeadline) {
    if (!SendRaw(Format(method, path, body))) return HttpReply{.closed = true};
    return ReadReply(timeout);
  }

  // Reads one response (Content-Length or chunked). status 0 if none arrived in time.
  HttpReply ReadReply(std::chrono::milliseconds timeout = kHangDeadline) {
    HttpReply reply;
    const auto end = std::chrono::steady_clock::now() + timeout;
    size_t header_end;
    while ((header_end = buffer_.find("\r\n\r\n")) == std::string::npos) {
      if (!Fill(end)) {
        reply.closed = true;
        return reply;
      }
    }
    reply.headers = buffer_.substr(0, header_end + 2);
    buffer_.erase(0, header_end + 4);
    if (reply.headers.size() >= 12) reply.status = std::atoi(reply.headers.c_str() + 9);
    const std::string length = reply.Header("Content-Length");
    if (!length.empty()) {
      const size_t n = std::stoul(length);
      while (buffer_.size() < n) {
        if (!Fill(end)) return reply;
      }
      reply.body = buffer_.substr(0, n);
      buffer_.erase(0, n);
    } else if (reply.Header("Transfer-Encoding").find("chunked") != std::string::npos) {
      for (;;) {
        size_t eol;
        while ((eol = buffer_.find("\r\n")) == std::string::npos) {
          if (!Fill(end)) return reply;
        }
        const size_t size = std::stoul(buffer_.substr(0, eol), nullptr, 16);
        while (buffer_.size() < eol + 2 + size + 2) {
          if (!Fill(end)) return reply;
        }
        reply.body += buffer_.substr(eol + 2, size);
        buffer_.erase(0, eol + 2 + size + 2);
        if (size == 0) break;
      }
    }
    reply.closed = reply.Header("Connection").find("close") != std::string::npos;
    return reply;
  }

  // True once the server has closed the connection (EOF), waiting at most `timeout`.
  bool WaitClosed(std::chrono::milliseconds timeout = kHangDeadline) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (Fill(end)) {
    }
    return eof_;
  }

 private:
  // Appends what arrives before `end`; false on EOF, error or timeout.
  bool Fill(std::chrono::steady_clock::time_point end) {
    if (fd_ < 0 || eof_) return false;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    char buf[65536];
    ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n <= 0) {
      eof_ = true;
      return false;
    }
    buffer_.append(buf, static_cast<size_t>(n));
    return true;
  }

  int fd_ = -1;
  bool eof_ = false;
  std::string buffer_;
};

// One request on a fresh connection.
inline HttpReply HttpCall(int port, const std::string& method, const std::string& path, std::string_view body = {}) {
  HttpConnection c(port);
  if (!c.connected()) return {};
  return c.Request(method, path, body);
}

// The real binary in embedded mode, run by the tests' process runner (e2e::Process: its own
// process group, stdout/stderr in <dir>/extender.out/.err, stopped when the test ends). Ports
// are ephemeral (127.0.0.1:0) and read back from its log, so parallel tests never collide.
class ExtenderProcess {
 public:
  // `snapshot_json`: the --cluster-snapshot file's content. `extra`: more flags.
  ExtenderProcess(const std::string& dir, const std::string& snapshot_json, std::vector<std::string> extra = {}) {
    const std::string snapshot = dir + "/snapshot.json";
    WriteFile(snapshot, snapshot_json);
    std::vector<std::string> args = {"--listen", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0", "--cluster-snapshot",
                                     snapshot};
    for (auto& e : extra) args.push_back(std::move(e));
    // The runner appends to its logs: a previous run's "Serving" line must not be read.
    for (const char* ext : {".out", ".err"}) std::filesystem::remove(dir + "/extender" + ext);
    auto p = e2e::Process::Start(
        {.name = "extender", .binary = PHALANX_EXTENDER_BINARY, .args = std::move(args), .env = {}, .log_dir = dir});
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    if (p.ok()) process_ = std::move(*p);
  }

  std::string log() const {
    return process_ ? ReadFile(process_->stdout_path()) + ReadFile(process_->stderr_path()) : "";
  }

  bool running() { return process_ && process_->Running(); }
  int exit_code() { return process_ ? process_->exit_status().value_or(-1) : -1; }

  // Waits for "Serving listen=H:P metrics=H:P" and /readyz; false if it exited or hung.
  bool WaitServing() {
    const bool found = WaitUntil([&] {
      std::smatch m;
      const std::string l = log();
      if (std::regex_search(l, m, std::regex("listen=\"?[0-9.]+:([0-9]+)\"?.*metrics=\"?[0-9.]+:([0-9]+)"))) {
        port_ = std::stoi(m[1]);
        metrics_port_ = std::stoi(m[2]);
      }
      return port_ != 0 || !running();
    });
    if (!found || port_ == 0) return false;
    return WaitUntil([&] { return HttpCall(port_, "GET", "/readyz").status == 200 || !running(); }) && running();
  }

  // SIGTERM and the exit code (SIGKILL after kHangDeadline: 128 + 9).
  std::optional<int> Stop() {
    if (!process_) return std::nullopt;
    return process_->Stop(kHangDeadline);
  }

  int port() const { return port_; }
  int metrics_port() const { return metrics_port_; }

 private:
  std::unique_ptr<e2e::Process> process_;
  int port_ = 0;
  int metrics_port_ = 0;
};

// Runs a command line (argv) to completion with the process runner; its stdout then stderr
// in *out; the exit code (-1 if it could not start or did not end within a minute).
inline int RunCommand(const std::vector<std::string>& args, std::string* out, const std::string& dir) {
  for (const char* ext : {".out", ".err"}) std::filesystem::remove(dir + "/command" + ext);
  auto p = e2e::Process::Start({.name = "command",
                                .binary = args.at(0),
                                .args = std::vector<std::string>(args.begin() + 1, args.end()),
                                .env = {},
                                .log_dir = dir});
  if (!p.ok()) return -1;
  const bool ended = WaitUntil([&] { return !(*p)->Running(); }, std::chrono::seconds(60));
  *out = ReadFile((*p)->stdout_path()) + ReadFile((*p)->stderr_path());
  return ended ? (*p)->exit_status().value_or(-1) : -1;
}

}  // namespace phalanx::extender::testing
