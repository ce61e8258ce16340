// Bench-side HTTP and process helpers shared by the extender load drivers: a blocking
// keep-alive HTTP/1.1 connection (replies read by Content-Length), file reading, percentiles.
// Header-only bench code.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace phalanx::extender::bench {

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Blocking keep-alive HTTP/1.1 connection; replies are read by Content-Length.
class Conn {
 public:
  explicit Conn(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
      ::close(fd_);
      fd_ = -1;
      return;
    }
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  ~Conn() {
    if (fd_ >= 0) ::close(fd_);
  }
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;
  bool ok() const { return fd_ >= 0; }

  static std::string Format(const std::string& method, const std::string& path, const std::string& body) {
    return method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\n\r\n" + body;
  }
  bool Send(const std::string& bytes) {
    size_t off = 0;
    while (off < bytes.size()) {
      ssize_t n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += static_cast<size_t>(n);
    }
    return true;
  }
  // Status code of one reply (0 on failure); the body in *body. Received bytes land in one
  // reusable buffer (no per-recv bounce, no regrowth once it fits the largest reply), so the
  // client adds little to a 0.5 MB reply's wall time.
  int Read(std::string* body) {
    size_t end;
    while ((end = Pending().find("\r\n\r\n")) == std::string_view::npos) {
      if (!Fill()) return 0;
    }
    const std::string_view head = Pending().substr(0, end);
    const int status = std::atoi(head.data() + 9);
    size_t length = 0;
    const size_t cl = head.find("Content-Length: ");
    if (cl != std::string_view::npos) length = std::strtoul(head.data() + cl + 16, nullptr, 10);
    const size_t total = end + 4 + length;
    Reserve(total);
    while (end_ - start_ < total) {
      if (!Fill()) return 0;
    }
    if (body) body->assign(buf_.data() + start_ + end + 4, length);
    start_ += total;
    if (start_ == end_) start_ = end_ = 0;
    return status;
  }
  int Call(const std::string& request, std::string* body) { return Send(request) ? Read(body) : 0; }

 private:
  std::string_view Pending() const { return {buf_.data() + start_, end_ - start_}; }
  // Room for `bytes` from start_ on (unread bytes moved to the front first).
  void Reserve(size_t bytes) {
    if (start_ + bytes <= buf_.size()) return;
    std::memmove(buf_.data(), buf_.data() + start_, end_ - start_);
    end_ -= start_;
    start_ = 0;
    if (bytes > buf_.size()) buf_.resize(std::max(bytes, buf_.size() * 2));
  }
  bool Fill() {
    if (end_ == buf_.size()) Reserve(buf_.size() * 2 - start_);
    const ssize_t n = ::recv(fd_, buf_.data() + end_, buf_.size() - end_, 0);
    if (n <= 0) return false;
    end_ += static_cast<size_t>(n);
    return true;
  }
  int fd_ = -1;
  std::vector<char> buf_ = std::vector<char>(1 << 16);
  size_t start_ = 0, end_ = 0;  // unread bytes: [start_, end_)
};

inline double Percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<long>(i), v.end());
  return v[i];
}

}  // namespace phalanx::extender::bench
