// Internal: state shared by the server, its connections and outstanding ResponseWriters. Held by
// shared_ptr so that whichever of them is destroyed last frees it; it owns no io object except
// the TLS context (which Asio does not bind to an io_context).
//
// Thread-safety: all members are safe to use from any thread (mutexes and atomics as marked);
// `options` and `logger` are set before the first connection exists and never change.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include <boost/asio/ssl/context.hpp>

#include "core/http/exchange.h"
#include "core/http/http_server.h"
#include "core/http/route_table.h"

namespace phalanx::http::internal {

struct ServerCore {
  explicit ServerCore(ServerOptions server_options);

  const ServerOptions options;
  const std::shared_ptr<spdlog::logger> logger;
  // The TLS context a new connection takes (null without options.tls): set by Start(), replaced by
  // HttpServer::ReloadTls(). Each TLS session keeps a reference to the one it started with, so a
  // reload changes nothing for open connections and the listener never closes.
  std::shared_ptr<boost::asio::ssl::context> tls() const;
  void SetTls(std::shared_ptr<boost::asio::ssl::context> context);

  std::atomic<bool> draining{false};

  // See exchange.h "Lifetime": guards posting to the io_context against its destruction.
  std::mutex lifeline_mu;
  bool alive = true;  // guarded by lifeline_mu

  std::shared_ptr<const RouteTable> routes() const;
  void EditRoutes(const std::function<void(RouteTable&)>& edit);

  void Register(const std::shared_ptr<Connection>& connection);
  void Unregister(const Connection* connection);
  std::vector<std::shared_ptr<Connection>> LiveConnections();
  // True when no connection is left by `deadline`.
  bool WaitForNoConnections(std::chrono::steady_clock::time_point deadline);

 private:
  mutable std::mutex tls_mu_;
  std::shared_ptr<boost::asio::ssl::context> tls_;  // guarded by tls_mu_

  mutable std::mutex routes_mu_;
  std::shared_ptr<const RouteTable> routes_;  // guarded by routes_mu_; copy-on-write

  std::mutex connections_mu_;
  std::condition_variable connections_cv_;
  std::unordered_map<const Connection*, std::weak_ptr<Connection>> connections_;
};

}  // namespace phalanx::http::internal
