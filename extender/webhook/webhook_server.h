// WebhookServer: the HTTPS listener of the gang-gate admission webhook (webhook.h), apart from
// the verbs and metrics listeners (--webhook-addr; docs/extender.md "Admission webhook").
//   POST /mutate-pods   AdmissionReview v1 -> AdmissionReview v1 (400 on a malformed review)
// The certificate and key are re-read when either file changes (a renewed Secret: kubelet
// swaps the mounted files; cert-manager renews before expiry). A new pair that does not load
// is logged and the old one keeps serving. The swap is in place (HttpServer::ReloadTls): the
// listener never closes, and connections already open finish on the old pair.
// Thread-safe; Start once, Shutdown once (or let the destructor do it).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "core/base/result.h"
#include "core/base/status.h"
#include "core/http/http_server.h"
#include "core/metrics/registry.h"
#include "extender/webhook/webhook.h"

namespace spdlog {
class logger;
}  // namespace spdlog

namespace phalanx::extender {

struct WebhookServerOptions {
  std::string host = "0.0.0.0";
  uint16_t port = 9443;  // 0 = ephemeral (tests)
  std::string cert_file, key_file;
  WebhookOptions review;
  // How often the files are checked for a change (a stat of each).
  std::chrono::milliseconds cert_poll{std::chrono::seconds(2)};
  // The API server sends one Pod per review; a Pod is at most ~1.5 MB (etcd's request limit).
  size_t max_body_bytes = 8u << 20;
  std::shared_ptr<spdlog::logger> logger;  // null = spdlog::default_logger()
};

// The options from the daemon's flags, checked before anything starts: errors name the flag
// (and the file). nullopt when --webhook-addr is not given (the webhook is off).
Result<std::optional<WebhookServerOptions>> WebhookOptionsFromFlags(const std::string& addr,
                                                                    const std::string& cert_file,
                                                                    const std::string& key_file,
                                                                    const std::string& scheduler_name);

// The options when the certificate is self-managed (webhook_cert_rotator.h): the files in
// `cert_dir` are written by the rotator, so they need not exist yet; Start once they do.
Result<WebhookServerOptions> WebhookOptionsForManagedCerts(const std::string& addr, const std::string& cert_dir,
                                                           const std::string& scheduler_name);

class WebhookServer {
 public:
  WebhookServer(WebhookServerOptions options, metrics::Registry& registry);
  ~WebhookServer();
  WebhookServer(const WebhookServer&) = delete;
  WebhookServer& operator=(const WebhookServer&) = delete;

  // InvalidArgument naming the file when the certificate or key does not load; Unavailable
  // when the port is taken.
  Status Start();
  void Shutdown();
  uint16_t port() const;

 private:
  std::unique_ptr<http::HttpServer> MakeServer() const;
  std::string Stamp() const;  // identity of both files' current contents ("" = unreadable)
  void WatchCertificates();

  WebhookServerOptions options_;
  metrics::CounterFamily* reviews_ = nullptr;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;                     // guarded by mu_
  std::unique_ptr<http::HttpServer> server_;  // guarded by mu_
  uint16_t port_ = 0;                     // guarded by mu_
  std::thread watcher_;
};

}  // namespace phalanx::extender
