// HttpServer: acceptor, io threads and graceful shutdown. Connections live in session.cc.
#include "core/http/http_server.h"

#include <spdlog/spdlog.h>

#include <future>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include "core/http/server_core.h"
#include "core/http/session.h"
#include "core/http/tls_context.h"

namespace phalanx::http {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using internal::Connection;
using internal::ServerCore;

namespace {

// After this long past the grace period, shutdown stops waiting for closed connections to
// finish their last handlers; they are then destroyed with the io_context.
constexpr std::chrono::seconds kForceCloseWait{5};
// Pause before accepting again after an accept error such as EMFILE, instead of spinning.
constexpr std::chrono::milliseconds kAcceptRetryDelay{50};

Result<tcp::endpoint> ResolveListenAddress(asio::io_context& io, const std::string& address,
                                           uint16_t port) {
  error_code ec;
  const auto ip = asio::ip::make_address(address, ec);
  if (!ec) return tcp::endpoint(ip, port);
  tcp::resolver resolver(io);
  auto results = resolver.resolve(address, std::to_string(port), tcp::resolver::passive, ec);
  if (ec || results.empty()) {
    return InvalidArgumentError("listen address " + address + ": " +
                                (ec ? ec.message() : std::string("no addresses")));
  }
  return results.begin()->endpoint();
}

}  // namespace

class HttpServer::Impl {
 public:
  explicit Impl(ServerOptions options)
      : core_(std::make_shared<ServerCore>(std::move(options))),
        io_(std::max(1, core_->options.io_threads)),
        acceptor_strand_(asio::make_strand(io_)),
        acceptor_(acceptor_strand_),
        retry_timer_(acceptor_strand_) {}

  ~Impl() { Shutdown(std::chrono::seconds(5)); }

  ServerCore& core() { return *core_; }
  uint16_t port() const { return port_.load(); }

  Status Start() {
    std::lock_guard<std::mutex> lock(state_mu_);
    if (state_ != State::kNew) return FailedPreconditionError("HTTP server was already started");
    const ServerOptions& options = core_->options;
    if (options.tls) {
      PHX_ASSIGN_OR_RETURN(auto context, internal::MakeServerTlsContext(*options.tls));
      core_->SetTls(std::move(context));
    }
    PHX_ASSIGN_OR_RETURN(const tcp::endpoint endpoint,
                         ResolveListenAddress(io_, options.address, options.port));
    const std::string where = options.address + ":" + std::to_string(options.port);
    error_code ec;
    acceptor_.open(endpoint.protocol(), ec);
    if (ec) return UnavailableError("open listener " + where + ": " + ec.message());
    acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
    if (ec) return UnavailableError("set SO_REUSEADDR on " + where + ": " + ec.message());
    acceptor_.bind(endpoint, ec);
    if (ec) {
      acceptor_.close();
      if (ec == asio::error::access_denied) {
        return PermissionDeniedError("bind " + where + ": " + ec.message());
      }
      return UnavailableError("bind " + where + ": " + ec.message());
    }
    acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) return UnavailableError("listen on " + where + ": " + ec.message());
    port_.store(acceptor_.local_endpoint().port());

    work_.emplace(io_.get_executor());
    Accept();
    const int threads = std::max(1, options.io_threads);
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { RunIo(); });
    state_ = State::kRunning;
    core_->logger->info("Started HTTP server address={}:{} tls={} ioThreads={}", options.address,
                        port_.load(), options.tls.has_value(), threads);
    return OkStatus();
  }

  Status ReloadTls() {
    std::lock_guard<std::mutex> lock(state_mu_);
    const ServerOptions& options = core_->options;
    if (!options.tls) return FailedPreconditionError("HTTP server has no TLS to reload");
    if (state_ != State::kRunning) return FailedPreconditionError("HTTP server is not running");
    PHX_ASSIGN_OR_RETURN(auto context, internal::MakeServerTlsContext(*options.tls));
    core_->SetTls(std::move(context));
    core_->logger->info("Reloaded HTTP server TLS certificate port={} cert={}", port_.load(), options.tls->cert_file);
    return OkStatus();
  }

  void Shutdown(std::chrono::milliseconds grace) {
    std::lock_guard<std::mutex> lock(state_mu_);
    if (state_ != State::kRunning) {
      state_ = State::kStopped;
      return;
    }
    state_ = State::kStopped;
    core_->draining.store(true);

    // Stop accepting (on the acceptor's strand: Asio objects are not thread-safe).
    std::promise<void> closed;
    asio::post(acceptor_strand_, [this, &closed] {
      error_code ec;
      acceptor_.close(ec);
      retry_timer_.cancel();
      closed.set_value();
    });
    closed.get_future().wait();

    // Phase 1: close idle connections, end streams, let pending replies go out.
    for (const auto& connection : core_->LiveConnections()) {
      asio::post(connection->strand(), [connection] { connection->BeginDrain(); });
    }
    const auto grace_end = std::chrono::steady_clock::now() + grace;
    if (!core_->WaitForNoConnections(grace_end)) {
      // Phase 2: whatever is still open (held replies, slow clients) is closed now.
      size_t forced = 0;
      for (const auto& connection : core_->LiveConnections()) {
        ++forced;
        asio::post(connection->strand(), [connection] { connection->ForceClose(); });
      }
      core_->logger->warn("Closed HTTP connections still busy after the grace period connections={} "
                          "graceMs={}", forced, grace.count());
      if (!core_->WaitForNoConnections(std::chrono::steady_clock::now() + kForceCloseWait)) {
        core_->logger->warn("HTTP connections outlived shutdown; destroying them with the io context");
      }
    }
    work_.reset();
    io_.stop();
    for (std::thread& t : threads_) t.join();
    threads_.clear();
    {
      // From here on no writer may post to io_ (see exchange.h "Lifetime").
      std::lock_guard<std::mutex> lifeline(core_->lifeline_mu);
      core_->alive = false;
    }
    core_->logger->info("Stopped HTTP server port={}", port_.load());
  }

 private:
  enum class State { kNew, kRunning, kStopped };

  void RunIo() {
    for (;;) {
      try {
        io_.run();
        return;
      } catch (const std::exception& e) {
        // Handlers catch their own exceptions; this is a last line of defence so one bug does
        // not take the io thread (and every connection on it) down.
        core_->logger->error("Unexpected exception on HTTP io thread err=\"{}\"", e.what());
      }
    }
  }

  void Accept() {
    auto strand = asio::make_strand(io_);
    acceptor_.async_accept(strand, [this, strand](error_code ec, tcp::socket socket) {
      OnAccept(ec, std::move(socket), strand);
    });
  }

  void OnAccept(error_code ec, tcp::socket socket, const Connection::Strand& strand) {
    if (ec == asio::error::operation_aborted || !acceptor_.is_open() || core_->draining.load()) {
      return;
    }
    if (ec) {
      core_->logger->warn("Failed to accept HTTP connection err=\"{}\"", ec.message());
      retry_timer_.expires_after(kAcceptRetryDelay);
      retry_timer_.async_wait([this](error_code e) {
        if (!e && acceptor_.is_open()) Accept();
      });
      return;
    }
    std::shared_ptr<Connection> connection = internal::MakeSession(core_, std::move(socket), strand);
    core_->Register(connection);
    asio::post(strand, [connection] { connection->Start(); });
    Accept();
  }

  const std::shared_ptr<ServerCore> core_;
  asio::io_context io_;  // declared first among io objects: destroyed last
  Connection::Strand acceptor_strand_;
  tcp::acceptor acceptor_;
  asio::steady_timer retry_timer_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  std::vector<std::thread> threads_;
  std::atomic<uint16_t> port_{0};
  std::mutex state_mu_;
  State state_ = State::kNew;  // guarded by state_mu_
};

HttpServer::HttpServer(ServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

HttpServer::~HttpServer() = default;

void HttpServer::Handle(std::string method, std::string path, Handler handler) {
  impl_->core().EditRoutes([&](RouteTable& routes) {
    routes.Add(std::move(method), std::move(path), std::move(handler));
  });
}

void HttpServer::Handle(std::string method, std::string path, SyncHandler handler) {
  Handle(std::move(method), std::move(path),
         Handler([handler = std::move(handler)](Request&& request, ResponseWriter&& writer) {
           writer.Reply(handler(request));
         }));
}

void HttpServer::HandlePrefix(std::string method, std::string prefix, Handler handler) {
  impl_->core().EditRoutes([&](RouteTable& routes) {
    routes.AddPrefix(std::move(method), std::move(prefix), std::move(handler));
  });
}

Status HttpServer::Start() { return impl_->Start(); }

uint16_t HttpServer::port() const { return impl_->port(); }

Status HttpServer::ReloadTls() { return impl_->ReloadTls(); }

void HttpServer::Shutdown(std::chrono::milliseconds grace) { impl_->Shutdown(grace); }

}  // namespace phalanx::http
