// The admission webhook's HTTPS listener and certificate reload (see webhook_server.h).
#include "extender/webhook/webhook_server.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/http/tls_context.h"
#include "extender/server/server.h"

namespace phalanx::extender {
namespace {

// One file's identity: a renewal replaces the file (new inode via kubelet's symlink swap) or
// rewrites it (new mtime/size).
std::string FileStamp(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "";
  return fmt::format("{}:{}:{}.{}:{}", st.st_dev, st.st_ino, st.st_mtim.tv_sec, st.st_mtim.tv_nsec, st.st_size);
}

}  // namespace

Result<std::optional<WebhookServerOptions>> WebhookOptionsFromFlags(const std::string& addr,
                                                                    const std::string& cert_file,
                                                                    const std::string& key_file,
                                                                    const std::string& scheduler_name) {
  if (addr.empty()) {
    if (!cert_file.empty() || !key_file.empty()) {
      return InvalidArgumentError(
          "--webhook-tls-cert/--webhook-tls-key need --webhook-addr (the webhook is off without it)");
    }
    return std::optional<WebhookServerOptions>();
  }
  WebhookServerOptions options;
  if (Status st = ParseHostPort(addr, &options.host, &options.port); !st.ok()) {
    return InvalidArgumentError("--webhook-addr " + std::string(st.message()));
  }
  // The API server calls webhooks over HTTPS only.
  if (cert_file.empty()) return InvalidArgumentError("--webhook-addr needs --webhook-tls-cert (PEM certificate)");
  if (key_file.empty()) return InvalidArgumentError("--webhook-addr needs --webhook-tls-key (PEM private key)");
  for (auto [flag, file] : {std::pair{"--webhook-tls-cert", &cert_file}, std::pair{"--webhook-tls-key", &key_file}}) {
    if (std::FILE* f = std::fopen(file->c_str(), "rb")) {
      std::fclose(f);
    } else {
      return InvalidArgumentError(fmt::format("{} {}: {}", flag, *file, std::strerror(errno)));
    }
  }
  auto context =
      http::internal::MakeServerTlsContext({.cert_file = cert_file, .key_file = key_file, .client_ca_file = ""});
  if (!context.ok()) {
    return InvalidArgumentError(fmt::format("--webhook-tls-cert/--webhook-tls-key: {}", context.status().message()));
  }
  if (scheduler_name.empty()) return InvalidArgumentError("--webhook-scheduler-name: empty");
  options.cert_file = cert_file;
  options.key_file = key_file;
  options.review.scheduler_name = scheduler_name;
  return std::optional<WebhookServerOptions>(std::move(options));
}

Result<WebhookServerOptions> WebhookOptionsForManagedCerts(const std::string& addr, const std::string& cert_dir,
                                                           const std::string& scheduler_name) {
  WebhookServerOptions options;
  if (addr.empty()) return InvalidArgumentError("--webhook-cert-secret needs --webhook-addr");
  if (Status st = ParseHostPort(addr, &options.host, &options.port); !st.ok()) {
    return InvalidArgumentError("--webhook-addr " + std::string(st.message()));
  }
  if (scheduler_name.empty()) return InvalidArgumentError("--webhook-scheduler-name: empty");
  options.cert_file = cert_dir + "/tls.crt";
  options.key_file = cert_dir + "/tls.key";
  options.review.scheduler_name = scheduler_name;
  return options;
}

WebhookServer::WebhookServer(WebhookServerOptions options, metrics::Registry& registry)
    : options_(std::move(options)) {
  if (!options_.logger) options_.logger = spdlog::default_logger();
  auto reviews = registry.AddCounter("phalanx_extender_webhook_reviews_total",
                                     "Admission reviews of the gang-gate webhook: gated (gate added), unchanged, "
                                     "rejected (malformed review, 400).",
                                     {"result"});
  if (reviews.ok()) reviews_ = *reviews;
}

WebhookServer::~WebhookServer() { Shutdown(); }

std::unique_ptr<http::HttpServer> WebhookServer::MakeServer() const {
  http::ServerOptions so;
  so.address = options_.host;
  so.port = options_.port;
  so.max_body_bytes = options_.max_body_bytes;
  so.tls = http::TlsOptions{.cert_file = options_.cert_file, .key_file = options_.key_file, .client_ca_file = ""};
  so.logger = options_.logger;
  auto server = std::make_unique<http::HttpServer>(std::move(so));
  server->Handle("POST", std::string(kWebhookPath), http::SyncHandler([this](const http::Request& req) {
                   WebhookReply reply = ReviewPodAdmission(req.body, options_.review);
                   const char* result = reply.status != 200 ? "rejected" : reply.patched ? "gated" : "unchanged";
                   if (reviews_) {
                     if (auto c = reviews_->WithLabels({result}); c.ok()) (*c)->Inc();
                   }
                   if (reply.status != 200) {
                     options_.logger->warn("Rejected admission review from={} err={}", req.remote_address, reply.body);
                   }
                   http::Response r;
                   r.status = reply.status;
                   r.body = std::move(reply.body);
                   return r;
                 }));
  return server;
}

std::string WebhookServer::Stamp() const {
  std::string cert = FileStamp(options_.cert_file), key = FileStamp(options_.key_file);
  return cert.empty() || key.empty() ? "" : cert + "|" + key;
}

Status WebhookServer::Start() {
  std::unique_lock lock(mu_);
  if (server_) return FailedPreconditionError("webhook server already started");
  const std::string stamp = Stamp();
  auto server = MakeServer();
  if (Status st = server->Start(); !st.ok()) return st;
  port_ = server->port();
  server_ = std::move(server);
  watcher_ = std::thread([this, stamp] {
    std::string loaded = stamp;
    std::string refused;  // a pair that failed to load, logged once
    std::unique_lock lock(mu_);
    while (!cv_.wait_for(lock, options_.cert_poll, [&] { return stop_; })) {
      const std::string now = Stamp();
      if (now.empty() || now == loaded || now == refused) continue;
      // Swapped in place: the listener never closes, open connections keep the old pair. A
      // half-renewed pair (cert without its key) does not load and is retried on the next change.
      if (Status st = server_->ReloadTls(); !st.ok()) {
        options_.logger->warn("Webhook certificate changed but does not load; serving the old one err={}",
                              st.message());
        refused = now;
        continue;
      }
      loaded = now;
      refused.clear();
      options_.logger->info("Webhook certificate reloaded cert={}", options_.cert_file);
    }
  });
  return OkStatus();
}

void WebhookServer::Shutdown() {
  {
    std::lock_guard lock(mu_);
    if (stop_) return;
    stop_ = true;
  }
  cv_.notify_all();
  if (watcher_.joinable()) watcher_.join();
  std::lock_guard lock(mu_);
  if (server_) server_->Shutdown(std::chrono::seconds(1));
}

uint16_t WebhookServer::port() const {
  std::lock_guard lock(mu_);
  return port_;
}

}  // namespace phalanx::extender
