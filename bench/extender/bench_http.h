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
#include <fstream>
#include <sstream>
#include <string>
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
  // Status code of one reply (0 on failure); the body in *body.
  int Read(std::string* body) {
    size_t end;
    while ((end = buf_.find("\r\n\r\n")) == std::string::npos) {
      if (!Fill()) return 0;
    }
    const int status = std::atoi(buf_.c_str() + 9);
    size_t length = 0;
    const size_t cl = buf_.find("Content-Length: ");
    if (cl != std::string::npos && cl < end) length = std::stoul(buf_.substr(cl + 16));
    while (buf_.size() < end + 4 + length) {
      if (!Fill()) return 0;
    }
    if (body) body->assign(buf_, end + 4, length);
    buf_.erase(0, end + 4 + length);
    return status;
  }
  int Call(const std::string& request, std::string* body) { return Send(request) ? Read(body) : 0; }

 private:
  bool Fill() {
    char tmp[1 << 16];
    ssize_t n = ::recv(fd_, tmp, sizeof(tmp), 0);
    if (n <= 0) return false;
    buf_.append(tmp, static_cast<size_t>(n));
    return true;
  }
  int fd_ = -1;
  std::string buf_;
};

inline double Percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<long>(i), v.end());
  return v[i];
}

}  // namespace phalanx::extender::bench
