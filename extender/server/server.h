// ExtenderServer: the HTTP face of the Extender (docs/architecture.md §2.5 "Ports").
//   --listen        POST /v1/filter, /v1/prioritize, /v1/preempt, /v1/bind; GET /healthz, /readyz
//   --metrics-addr  GET /metrics, /healthz, /readyz, /debug/state, /debug/explain?pod=NS/NAME
// Malformed requests get 400 with {"Error":"<what and where>"} and change nothing.
// A held bind costs one connection and one ResponseWriter, never a thread.
// Thread-safe; Start once, Shutdown once (or let the destructor do it).
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "core/http/http_server.h"
#include "core/metrics/registry.h"
#include "extender/extender.h"

namespace phalanx::extender {

struct ServerAddresses {
  std::string listen_host = "127.0.0.1";
  uint16_t listen_port = 8888;
  std::string metrics_host = "0.0.0.0";
  uint16_t metrics_port = 8080;
  bool serve_metrics = true;
  int io_threads = 2;
  size_t max_body_bytes = 64u << 20;  // a full-Nodes request over 5,000 nodes is ~15 MB
  // A request (headers and body) must arrive within this long, and an idle keep-alive
  // connection is closed after it. Longer than Go's 90 s idle-connection timeout, so the
  // scheduler's client, not the server, closes idle connections (no reuse race). A client
  // that stalls mid-body only costs its own connection: reads are asynchronous.
  std::chrono::seconds read_timeout{120};
};

// "127.0.0.1:8888" / ":8080" (empty host = all interfaces). InvalidArgument otherwise.
Status ParseHostPort(std::string_view text, std::string* host, uint16_t* port);

class ExtenderServer {
 public:
  ExtenderServer(Extender& extender, metrics::Registry& registry, ServerAddresses addresses);
  ~ExtenderServer();

  Status Start();
  void Shutdown();
  uint16_t port() const;
  uint16_t metrics_port() const;
  // /readyz turns 200 once the ledger is synced (snapshot loaded / informers synced).
  void SetReady(bool ready) { SetReadiness(ready, ""); }
  // Not ready: `why` (the reasons, "; "-separated) is the 503 body. Ready: `why` holds notes
  // (what it runs without), shown as "ok: <why>"; empty: "ok".
  void SetReadiness(bool ready, std::string why);

 private:
  void Register(http::HttpServer& server, bool verbs, bool debug);
  void Count(const char* verb, int status, double seconds);

  Extender& extender_;
  metrics::Registry& registry_;
  ServerAddresses addresses_;
  std::atomic<bool> ready_{false};
  mutable std::mutex why_mu_;
  std::string why_ = "ledger not synced yet";  // guarded by why_mu_
  metrics::CounterFamily* requests_ = nullptr;
  metrics::HistogramFamily* latency_ = nullptr;
  std::unique_ptr<http::HttpServer> verbs_;
  std::unique_ptr<http::HttpServer> metrics_;
};

}  // namespace phalanx::extender
