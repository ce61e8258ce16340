// ScriptedServer: a small in-test API server on core/http. Records every request and answers
// with a handler the test sets (default: 200 "{}"). Thread-safe.
#pragma once

#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/http/http_server.h"
#include "core/kube/config.h"

namespace phalanx::kube::testing {

struct Recorded {
  std::string method, target, content_type, authorization, accept, body;
};

inline bool WaitUntil(const std::function<bool()>& condition,
                      std::chrono::milliseconds deadline = std::chrono::seconds(20)) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  while (std::chrono::steady_clock::now() < end) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return condition();
}

class ScriptedServer {
 public:
  using AsyncHandler = std::function<void(const http::Request&, http::ResponseWriter&&)>;

  explicit ScriptedServer(std::optional<http::TlsOptions> tls = std::nullopt)
      : server_(MakeOptions(std::move(tls))) {
    server_.HandlePrefix("*", "/", [this](http::Request&& req, http::ResponseWriter&& w) {
      AsyncHandler handler;
      {
        std::lock_guard lock(mu_);
        requests_.push_back({req.method, req.target, std::string(req.HeaderValue("Content-Type")),
                             std::string(req.HeaderValue("Authorization")),
                             std::string(req.HeaderValue("Accept")), req.body});
        handler = handler_;
      }
      if (handler) {
        handler(req, std::move(w));
      } else {
        w.Reply({200, "application/json", {}, "{}"});
      }
    });
    started_ = server_.Start();
  }
  ~ScriptedServer() { server_.Shutdown(std::chrono::milliseconds(200)); }

  const Status& started() const { return started_; }
  uint16_t port() const { return server_.port(); }
  std::string url(bool https = false) const {
    return (https ? "https://127.0.0.1:" : "http://127.0.0.1:") + std::to_string(port());
  }
  KubeConfig Config() const {
    KubeConfig c;
    c.server = url();
    c.token = "t0ken";
    return c;
  }

  void SetAsync(AsyncHandler h) {
    std::lock_guard lock(mu_);
    handler_ = std::move(h);
  }
  void Set(std::function<http::Response(const http::Request&)> h) {
    SetAsync([h = std::move(h)](const http::Request& r, http::ResponseWriter&& w) { w.Reply(h(r)); });
  }
  std::vector<Recorded> requests() const {
    std::lock_guard lock(mu_);
    return requests_;
  }
  size_t count() const {
    std::lock_guard lock(mu_);
    return requests_.size();
  }

 private:
  static http::ServerOptions MakeOptions(std::optional<http::TlsOptions> tls) {
    http::ServerOptions o;
    o.tls = std::move(tls);
    return o;
  }

  http::HttpServer server_;
  Status started_;
  mutable std::mutex mu_;
  std::vector<Recorded> requests_;
  AsyncHandler handler_;
};

}  // namespace phalanx::kube::testing
