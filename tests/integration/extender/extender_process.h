// Test harness for the real phalanx-extender binary over HTTP (embedded mode):
//   ExtenderProcess   fork/exec with --cluster-snapshot and ephemeral ports (read back from
//                     its "Serving" log line), stdout+stderr to a file, SIGTERM/SIGKILL.
//   HttpConnection    a blocking HTTP/1.1 client on one keep-alive TCP connection that sends
//                     bytes exactly as given (raw fixture bodies, half bodies, garbage).
//   WaitUntil         polls a condition; deadlines only catch hangs (the machine is shared).
// Header-only test code; used by fixture_replay_test.cc and bad_input_http_test.cc.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

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

// A fresh directory under the test temp dir (removed by the caller or left for debugging).
inline std::string MakeTempDir(const std::string& name) {
  std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) /
                              ("phalanx-extwire-" + name + "-" + std::to_string(::getpid()));
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

// The real binary in embedded mode. Ports are ephemeral (127.0.0.1:0) and read back from its
// log, so parallel tests never collide.
class ExtenderProcess {
 public:
  // `snapshot_json`: the --cluster-snapshot file's content. `extra`: more flags.
  ExtenderProcess(const std::string& dir, const std::string& snapshot_json, std::vector<std::string> extra = {})
      : log_path_(dir + "/extender.log") {
    const std::string snapshot = dir + "/snapshot.json";
    WriteFile(snapshot, snapshot_json);
    std::vector<std::string> args = {PHALANX_EXTENDER_BINARY, "--listen",    "127.0.0.1:0",
                                     "--metrics-addr",        "127.0.0.1:0", "--cluster-snapshot",
                                     snapshot};
    for (auto& e : extra) args.push_back(std::move(e));
    pid_ = ::fork();
    if (pid_ == 0) {
      int fd = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      std::_Exit(127);
    }
  }
  ~ExtenderProcess() {
    if (pid_ > 0 && !exited_) {
      ::kill(pid_, SIGKILL);
      int st = 0;
      ::waitpid(pid_, &st, 0);
    }
  }
  ExtenderProcess(const ExtenderProcess&) = delete;
  ExtenderProcess& operator=(const ExtenderProcess&) = delete;

  std::string log() const { return ReadFile(log_path_); }

  bool running() {
    if (exited_) return false;
    int st = 0;
    if (::waitpid(pid_, &st, WNOHANG) == pid_) {
      exited_ = true;
      code_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
    return !exited_;
  }
  int exit_code() const { return code_; }

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

  // SIGTERM and the exit code (nullopt if it did not exit in time).
  std::optional<int> Stop() {
    if (exited_) return code_;
    ::kill(pid_, SIGTERM);
    if (!WaitUntil([&] { return !running(); })) return std::nullopt;
    return code_;
  }

  int port() const { return port_; }
  int metrics_port() const { return metrics_port_; }

 private:
  std::string log_path_;
  pid_t pid_ = -1;
  bool exited_ = false;
  int code_ = -1;
  int port_ = 0;
  int metrics_port_ = 0;
};

// Runs a command line (argv) to completion; stdout in *out; the exit code (-1 on failure).
inline int RunCommand(const std::vector<std::string>& args, std::string* out, const std::string& dir) {
  const std::string out_path = dir + "/command.out";
  pid_t pid = ::fork();
  if (pid == 0) {
    int fd = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    std::vector<std::string> copy = args;
    std::vector<char*> argv;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    std::_Exit(127);
  }
  int st = 0;
  ::waitpid(pid, &st, 0);
  *out = ReadFile(out_path);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

}  // namespace phalanx::extender::testing
