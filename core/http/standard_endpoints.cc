// AddStandardEndpoints: /healthz, /readyz and /metrics for every daemon (docs/architecture.md §2.5 "Ports").
// Kubernetes probes only look at the status code; the bodies are for humans and `curl`.
#include <string>
#include <utility>

#include "core/http/http_server.h"

namespace phalanx::http {

void AddStandardEndpoints(HttpServer& server, StandardEndpoints endpoints) {
  // Liveness: answering at all proves the io threads are not wedged.
  server.Handle("GET", "/healthz", SyncHandler([](const Request&) {
                  return Response{200, "text/plain; charset=utf-8", {}, "ok"};
                }));

  server.Handle("GET", "/readyz", SyncHandler([ready = std::move(endpoints.ready)](const Request&) {
                  std::string reason;
                  if (!ready || ready(&reason)) {
                    // Ready, with what it runs without (a degraded mode) if anything: "ok: ...".
                    return Response{200, "text/plain; charset=utf-8", {}, reason.empty() ? "ok" : "ok: " + reason};
                  }
                  if (reason.empty()) reason = "not ready";
                  return Response{503, "text/plain; charset=utf-8", {}, std::move(reason)};
                }));

  if (endpoints.metrics) {
    server.Handle("GET", "/metrics",
                  SyncHandler([metrics = std::move(endpoints.metrics)](const Request&) {
                    return Response{200, "text/plain; version=0.0.4; charset=utf-8", {}, metrics()};
                  }));
  }
}

}  // namespace phalanx::http
