// cpprest's U() macro breaks headers included after it.
#define _TURN_OFF_PLATFORM_STRING
#include "core/kube/cpprest_transport.h"

#include <atomic>
#include <map>
#include <mutex>
#include <system_error>

#include <boost/asio/ssl.hpp>
#include <cpprest/http_client.h>
#include <fmt/format.h>

namespace phalanx::kube {
namespace {

namespace http = web::http;
namespace client = web::http::client;

Status NetworkError(const std::exception& e, std::string_view what) {
  if (const auto* he = dynamic_cast<const http::http_exception*>(&e)) {
    if (he->error_code() == std::errc::timed_out) {
      return DeadlineExceededError(fmt::format("Timeout: {}: {}", what, e.what()));
    }
  }
  if (dynamic_cast<const pplx::task_canceled*>(&e) != nullptr) {
    return CancelledError(fmt::format("{}: cancelled", what));
  }
  return UnavailableError(fmt::format("Network (HTTP 0): {}: {}", what, e.what()));
}

// Loads PEM material into an asio context; throws boost::system::system_error when invalid.
void ApplyTls(const KubeConfig& config, boost::asio::ssl::context& ctx) {
  if (!config.ca_pem.empty()) ctx.add_certificate_authority(boost::asio::buffer(config.ca_pem));
  if (!config.client_cert_pem.empty()) {
    ctx.use_certificate_chain(boost::asio::buffer(config.client_cert_pem));
    ctx.use_private_key(boost::asio::buffer(config.client_key_pem), boost::asio::ssl::context::pem);
  }
}

http::http_request ToCpprest(const HttpRequest& request) {
  http::http_request req(http::method(request.method));
  req.set_request_uri(web::uri(request.target));
  for (const auto& [k, v] : request.headers) req.headers().add(k, v);
  if (!request.content_type.empty()) req.set_body(request.body, request.content_type);
  return req;
}

HeaderList Headers(const http::http_response& resp) {
  HeaderList out;
  for (const auto& [k, v] : resp.headers()) out.emplace_back(k, v);
  return out;
}

class CpprestStream final : public ResponseStream {
 public:
  CpprestStream(http::http_response response, pplx::cancellation_token_source cts, std::string what,
                const CpprestTransportOptions& options)
      : response_(std::move(response)),
        headers_(Headers(response_)),
        buf_(response_.body().streambuf()),
        cts_(std::move(cts)),
        what_(std::move(what)),
        max_line_(options.max_stream_line_bytes),
        max_backlog_(options.max_stream_backlog_bytes) {}
  ~CpprestStream() override { Cancel(); }

  int status() const override { return response_.status_code(); }
  const HeaderList& headers() const override { return headers_; }

  Result<bool> ReadLine(std::string& line) override {
    line.clear();
    while (true) {
      const size_t nl = pending_.find('\n', scan_from_);
      if (nl != std::string::npos) {
        line.assign(pending_, 0, nl);
        pending_.erase(0, nl + 1);
        scan_from_ = 0;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        return true;
      }
      scan_from_ = pending_.size();
      if (cancelled_.load()) return CancelledError(what_ + ": cancelled");
      if (pending_.size() > max_line_) {
        return Refuse(fmt::format("a line of more than {} bytes exceeds the limit of {} bytes", pending_.size(),
                                  max_line_));
      }
      const size_t buffered = buf_.in_avail();
      if (pending_.size() + buffered > max_backlog_) {
        return Refuse(fmt::format("{} bytes received but not yet read exceed the limit of {} bytes",
                                  pending_.size() + buffered, max_backlog_));
      }
      // Ask for what is buffered (at least one byte) so a partial line never waits for more
      // than the server sent.
      const size_t want = std::max<size_t>(1, std::min<size_t>(buffered, 1 << 16));
      uint8_t chunk[1 << 16];
      size_t got = 0;
      try {
        got = buf_.getn(chunk, want).get();
      } catch (const std::exception& e) {
        if (cancelled_.load()) return CancelledError(what_ + ": cancelled");
        return NetworkError(e, what_);
      }
      if (got == 0) {
        if (cancelled_.load()) return CancelledError(what_ + ": cancelled");
        if (pending_.empty()) return false;
        line = std::move(pending_);  // last line without '\n'
        pending_.clear();
        scan_from_ = 0;
        return true;
      }
      pending_.append(reinterpret_cast<const char*>(chunk), got);
    }
  }

  void Cancel() override {
    if (cancelled_.exchange(true)) return;
    cts_.cancel();
    try {
      buf_.close(std::ios::in).wait();
    } catch (...) {
    }
  }

 private:
  // Over a limit: the stream is cancelled (cpprest stops reading and its buffer is freed) and
  // what was held is dropped; later reads fail with kCancelled.
  Status Refuse(const std::string& why) {
    Cancel();
    pending_.clear();
    pending_.shrink_to_fit();
    scan_from_ = 0;
    return ResourceExhaustedError(fmt::format("{}: {}", what_, why));
  }

  http::http_response response_;
  HeaderList headers_;
  concurrency::streams::streambuf<uint8_t> buf_;
  pplx::cancellation_token_source cts_;
  std::string what_;
  const size_t max_line_, max_backlog_;
  std::string pending_;
  size_t scan_from_ = 0;
  std::atomic<bool> cancelled_{false};
};

class CpprestTransport final : public Transport {
 public:
  CpprestTransport(KubeConfig config, CpprestTransportOptions options)
      : config_(std::move(config)), options_(options) {}

  Result<HttpResponse> Send(const HttpRequest& request) override {
    const std::string what = request.method + " " + request.target;
    try {
      http::http_response resp = ClientFor(request.timeout).request(ToCpprest(request)).get();
      HttpResponse out;
      out.status = resp.status_code();
      out.headers = Headers(resp);
      out.body = resp.extract_utf8string(/*ignore_content_type=*/true).get();
      return out;
    } catch (const std::exception& e) {
      return NetworkError(e, what);
    }
  }

  Result<std::unique_ptr<ResponseStream>> OpenStream(const HttpRequest& request) override {
    std::string what = request.method + " " + request.target;
    pplx::cancellation_token_source cts;
    try {
      http::http_response resp =
          ClientFor(request.timeout).request(ToCpprest(request), cts.get_token()).get();
      return std::unique_ptr<ResponseStream>(
          std::make_unique<CpprestStream>(std::move(resp), std::move(cts), std::move(what), options_));
    } catch (const std::exception& e) {
      return NetworkError(e, what);
    }
  }

 private:
  // http_client's timeout is fixed per client: keep one (with its connection pool) per timeout.
  client::http_client& ClientFor(std::chrono::milliseconds timeout) {
    if (timeout.count() <= 0) timeout = options_.default_timeout;
    std::lock_guard lock(mu_);
    auto it = clients_.find(timeout);
    if (it != clients_.end()) return *it->second;
    client::http_client_config cfg;
    cfg.set_timeout(timeout);
    cfg.set_validate_certificates(!config_.insecure_skip_tls_verify);
    KubeConfig tls = config_;
    cfg.set_ssl_context_callback([tls](boost::asio::ssl::context& ctx) {
      try {
        ApplyTls(tls, ctx);
      } catch (...) {
        // Validated in MakeCpprestTransport; the handshake reports anything left.
      }
    });
    auto made = std::make_unique<client::http_client>(web::uri(config_.server), cfg);
    return *clients_.emplace(timeout, std::move(made)).first->second;
  }

  const KubeConfig config_;
  const CpprestTransportOptions options_;
  std::mutex mu_;
  std::map<std::chrono::milliseconds, std::unique_ptr<client::http_client>> clients_;
};

}  // namespace

Result<std::unique_ptr<Transport>> MakeCpprestTransport(const KubeConfig& config,
                                                        CpprestTransportOptions options) {
  try {
    web::uri uri(config.server);
    if (uri.host().empty()) throw std::invalid_argument("no host");
  } catch (const std::exception& e) {
    return InvalidArgumentError(fmt::format("server \"{}\" is not a valid URL: {}", config.server, e.what()));
  }
  try {
    boost::asio::ssl::context probe(boost::asio::ssl::context::tls_client);
    ApplyTls(config, probe);
  } catch (const std::exception& e) {
    return InvalidArgumentError(
        fmt::format("{}: unusable TLS material (CA or client certificate/key): {}", config.source, e.what()));
  }
  return std::unique_ptr<Transport>(std::make_unique<CpprestTransport>(config, options));
}

}  // namespace phalanx::kube
