// ServerCore: routes, connection registry and lifeline shared by the server and its connections.
#include "core/http/server_core.h"

#include <spdlog/spdlog.h>

#include <utility>

namespace phalanx::http::internal {

ServerCore::ServerCore(ServerOptions server_options)
    : options(std::move(server_options)),
      logger(options.logger ? options.logger : spdlog::default_logger()),
      routes_(std::make_shared<const RouteTable>()) {}

std::shared_ptr<boost::asio::ssl::context> ServerCore::tls() const {
  std::lock_guard<std::mutex> lock(tls_mu_);
  return tls_;
}

void ServerCore::SetTls(std::shared_ptr<boost::asio::ssl::context> context) {
  std::lock_guard<std::mutex> lock(tls_mu_);
  tls_ = std::move(context);  // the old one lives on in the sessions that hold it
}

std::shared_ptr<const RouteTable> ServerCore::routes() const {
  std::lock_guard<std::mutex> lock(routes_mu_);
  return routes_;
}

void ServerCore::EditRoutes(const std::function<void(RouteTable&)>& edit) {
  std::lock_guard<std::mutex> lock(routes_mu_);
  auto copy = std::make_shared<RouteTable>(*routes_);
  edit(*copy);
  routes_ = std::move(copy);
}

void ServerCore::Register(const std::shared_ptr<Connection>& connection) {
  std::lock_guard<std::mutex> lock(connections_mu_);
  connections_.emplace(connection.get(), connection);
}

void ServerCore::Unregister(const Connection* connection) {
  {
    std::lock_guard<std::mutex> lock(connections_mu_);
    connections_.erase(connection);
  }
  connections_cv_.notify_all();
}

std::vector<std::shared_ptr<Connection>> ServerCore::LiveConnections() {
  std::vector<std::shared_ptr<Connection>> live;
  std::lock_guard<std::mutex> lock(connections_mu_);
  live.reserve(connections_.size());
  for (const auto& [ptr, weak] : connections_) {
    if (auto c = weak.lock()) live.push_back(std::move(c));
  }
  return live;
}

bool ServerCore::WaitForNoConnections(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(connections_mu_);
  return connections_cv_.wait_until(lock, deadline, [&] { return connections_.empty(); });
}

}  // namespace phalanx::http::internal
