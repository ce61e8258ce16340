// HttpServer: the HTTP/1.1 (and HTTPS) server every Phalanx daemon uses, on Boost.Beast/Asio.
//
// Concept: a route table (exact path, or longest prefix) of handlers that receive a fully read
// Request and a ResponseWriter. A handler answers by calling Reply() (or streaming with
// StartStream/WriteChunk/EndStream) on the writer, now or later, from any thread. Nothing blocks
// per request: a held request (extender bind barrier, docs/architecture.md §6 "held binds") costs one
// connection object and one writer, never a thread. cpprestsdk's http_listener was not used
// because it cannot report an ephemeral port and adds latency (bench/RESULTS.md).
//
// Invariants:
//  - Each request gets exactly one response: Reply() once, or one stream. A writer destroyed
//    without replying answers 500 "handler did not reply"; a second Reply() is ignored and logged.
//  - Requests on one connection are answered in order; the next request on a keep-alive
//    connection is read only after the current response is fully written.
//  - Unknown path -> 404 JSON; known path with another method -> 405 (with Allow); malformed
//    HTTP -> 400 and the connection closed; body over max_body_bytes -> 413 without calling the
//    handler; headers over max_header_bytes -> 431. Both close the connection.
//  - A ResponseWriter may outlive its connection and the server: every call is then a no-op
//    (WriteChunk returns false, ClientGone() is true).
//
// Thread-safety: HttpServer's methods are thread-safe, except that Shutdown() and the destructor
// must not be called from a handler (they join the io threads). Handle*/HandlePrefix may be called
// before or after Start(). Handlers run on io threads, possibly concurrently for different
// connections: they must not block (long work goes elsewhere; reply later). A ResponseWriter is
// used by one thread at a time (it is a handle, not a shared object); its calls may come from any
// thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/status.h"

namespace spdlog {
class logger;
}  // namespace spdlog

namespace phalanx::http {

struct Header {
  std::string name, value;
};

struct Request {
  std::string method;  // "GET", "POST", ...
  std::string target;  // raw request target, "/api/v1/pods?watch=1&labelSelector=a%3Db"
  std::string path;    // target before '?', NOT percent-decoded
  std::vector<std::pair<std::string, std::string>> query;  // percent-decoded ('+' -> ' '), in order
  std::vector<Header> headers;
  std::string body;
  std::string remote_address;  // "127.0.0.1:53122"

  // Case-insensitive header lookup; "" when absent.
  std::string_view HeaderValue(std::string_view name) const;
  // First value of a query parameter, or nullopt.
  std::optional<std::string_view> QueryValue(std::string_view name) const;
};

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::vector<Header> headers;  // Content-Length/Transfer-Encoding/Connection are set by the server
  std::string body;
  // When set, sent instead of `body`: bytes the handler keeps for other replies (the extender's
  // kept no-fit answer, 215 KB), written from where they are rather than copied per reply.
  std::shared_ptr<const std::string> shared_body;
};

namespace internal {
class Exchange;  // one request's reply state, shared between its connection and its writer
}  // namespace internal

// A handle to answer one request. Movable, not copyable. Reply exactly once, from any thread, at
// any later time (held binds reply seconds later). Destroyed without a reply -> the client gets
// 500 "handler did not reply". A default-constructed or moved-from writer does nothing.
class ResponseWriter {
 public:
  ResponseWriter() = default;
  explicit ResponseWriter(std::shared_ptr<internal::Exchange> exchange);
  ResponseWriter(ResponseWriter&& other) noexcept = default;
  ResponseWriter& operator=(ResponseWriter&& other) noexcept;
  ResponseWriter(const ResponseWriter&) = delete;
  ResponseWriter& operator=(const ResponseWriter&) = delete;
  ~ResponseWriter();

  void Reply(Response response);
  // Streaming replies (Kubernetes watch): chunked transfer encoding, flushed per chunk.
  void StartStream(int status, std::string content_type, std::vector<Header> headers = {});
  // False once the client has gone away (stop writing), or when the client reads so slowly that
  // ServerOptions::max_stream_backlog_bytes are queued (the connection is then closed).
  bool WriteChunk(std::string data);
  void EndStream();  // terminating chunk; connection may be reused
  // Instead of a reply (or mid-stream): resets the connection (TCP RST, no response), as a
  // crashed peer or a middlebox does. For fault injection in test servers (the fake API server).
  void Abort();
  bool ClientGone() const;

 private:
  void Abandon();  // the destructor's work: 500 or end of stream if nothing was sent

  std::shared_ptr<internal::Exchange> exchange_;
};

using Handler = std::function<void(Request&&, ResponseWriter&&)>;  // async: keep the writer, reply later
using SyncHandler = std::function<Response(const Request&)>;       // convenience

struct TlsOptions {
  std::string cert_file, key_file;  // PEM; the cert file may hold the chain
  std::string client_ca_file;       // non-empty: require client certs and verify them against it
};

struct ServerOptions {
  std::string address = "127.0.0.1";
  uint16_t port = 0;                  // 0 = ephemeral; see HttpServer::port()
  size_t max_body_bytes = 16u << 20;  // larger bodies -> 413 without calling the handler
  int io_threads = 2;
  // Closes a connection idle (no request in progress) or stalled (a write not progressing) this
  // long. Does not apply while a handler holds the request or a stream waits for its next chunk.
  std::chrono::seconds idle_timeout{120};
  std::optional<TlsOptions> tls;  // HTTPS when set
  // Additions to the agreed contract:
  size_t max_header_bytes = 64u << 10;          // request line + headers; larger -> 431
  size_t max_stream_backlog_bytes = 64u << 20;  // unsent stream bytes before a slow client is cut off
  std::shared_ptr<spdlog::logger> logger;       // null = spdlog::default_logger()
};

class HttpServer {
 public:
  explicit HttpServer(ServerOptions options);
  ~HttpServer();  // Shutdown() if still running
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Exact path. method "*" = any method. A later registration for the same (method, path) wins.
  void Handle(std::string method, std::string path, Handler handler);
  void Handle(std::string method, std::string path, SyncHandler handler);
  // Longest matching prefix wins (exact routes are tried first); method "*" = any.
  void HandlePrefix(std::string method, std::string prefix, Handler handler);

  // Binds and starts serving; port() is valid afterwards. Fails (InvalidArgument for a bad
  // address or TLS files, Unavailable when the port is taken) without starting any thread.
  Status Start();
  uint16_t port() const;

  // Re-reads ServerOptions::tls's files (a renewed certificate) and hands the new context to the
  // connections accepted from now on; open connections keep the one they started with and the
  // listener never closes. A pair that does not load is an error (InvalidArgument, as Start) and
  // the old one keeps serving. FailedPrecondition without TLS or when not running.
  Status ReloadTls();

  // Stops accepting, lets in-flight requests finish for up to `grace`, closes streams, joins
  // threads. Idempotent. Streams are ended with their terminating chunk; connections whose
  // reply is still pending after `grace` are closed (their writers become no-ops).
  void Shutdown(std::chrono::milliseconds grace = std::chrono::seconds(5));

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// Registers GET /healthz (200 "ok" while the process is alive), GET /readyz (200 "ok" when
// ready() returns true, else 503 with the reason), and GET /metrics (text/plain;
// version=0.0.4, body from metrics()) when metrics is set. The callbacks run on io threads.
struct StandardEndpoints {
  // null = always ready. False: not ready, *reason the 503 body. True: ready, and *reason
  // (if set) notes what the daemon runs without: the 200 body is "ok: <reason>".
  std::function<bool(std::string* reason)> ready;
  std::function<std::string()> metrics;            // null = no /metrics route
};
void AddStandardEndpoints(HttpServer& server, StandardEndpoints endpoints);

}  // namespace phalanx::http
