// RawClient: plain HTTP requests to a fake API server for its own tests, through core/kube's
// transport but none of KubeClient's logic (no retries, no typed errors), so the tests see
// exactly what the server answers on the wire. Also a line reader for watch streams.
// Thread-compatible (one per test).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "core/json/json.h"
#include "core/kube/cpprest_transport.h"
#include "core/kube/transport.h"

namespace phalanx::fakes::apiserver::testing {

struct RawResponse {
  int status = 0;
  std::string body;
  kube::HeaderList headers;
  json::Json Json() const {
    auto parsed = json::Parse(body);
    return parsed.ok() ? std::move(parsed).value() : json::Json();
  }
  // Status objects: the reason ("Conflict", "Expired", ...).
  std::string Reason() const {
    json::Json j = Json();
    return j.is_object() ? j.value("reason", std::string()) : std::string();
  }
};

class RawClient {
 public:
  explicit RawClient(const std::string& url) {
    kube::KubeConfig config;
    config.server = url;
    auto transport = kube::MakeCpprestTransport(config);
    if (transport.ok()) transport_ = std::move(transport).value();
  }

  RawResponse Send(std::string method, std::string target, std::string body = "",
                   std::string content_type = "application/json") {
    kube::HttpRequest request;
    request.method = std::move(method);
    request.target = std::move(target);
    request.headers.push_back({"Authorization", "Bearer " + token_});
    request.headers.push_back({"Accept", "application/json"});
    if (!body.empty()) {
      request.content_type = std::move(content_type);
      request.body = std::move(body);
    }
    request.timeout = std::chrono::seconds(30);
    RawResponse out;
    if (!transport_) return out;
    auto response = transport_->Send(request);
    if (!response.ok()) {
      out.body = response.status().message();
      return out;
    }
    out.status = response->status;
    out.body = std::move(response->body);
    out.headers = std::move(response->headers);
    return out;
  }
  // The bearer token sent (default the fake's kubeconfig token).
  void set_token(std::string token) { token_ = std::move(token); }
  RawResponse Get(std::string target) { return Send("GET", std::move(target)); }
  RawResponse Post(std::string target, const json::Json& body) {
    return Send("POST", std::move(target), json::Dump(body));
  }
  RawResponse Put(std::string target, const json::Json& body) {
    return Send("PUT", std::move(target), json::Dump(body));
  }
  RawResponse Patch(std::string target, std::string body, std::string content_type) {
    return Send("PATCH", std::move(target), std::move(body), std::move(content_type));
  }
  RawResponse Delete(std::string target, const json::Json& options = json::Json()) {
    return Send("DELETE", std::move(target), options.is_null() ? "" : json::Dump(options));
  }

  // A watch stream (GET with watch=1 in `target`); null when it could not be opened.
  std::unique_ptr<kube::ResponseStream> Watch(std::string target) {
    kube::HttpRequest request;
    request.target = std::move(target);
    request.headers.push_back({"Authorization", "Bearer " + token_});
    request.timeout = std::chrono::seconds(30);  // idle: bookmarks arrive far more often
    if (!transport_) return nullptr;
    auto stream = transport_->OpenStream(request);
    if (!stream.ok()) return nullptr;
    return std::move(stream).value();
  }

 private:
  std::unique_ptr<kube::Transport> transport_;
  std::string token_ = "fake-token";
};

// Reads the next watch event; null Json when the stream ended or failed.
inline json::Json NextEvent(kube::ResponseStream& stream) {
  std::string line;
  auto read = stream.ReadLine(line);
  if (!read.ok() || !*read) return json::Json();
  auto parsed = json::Parse(line);
  return parsed.ok() ? std::move(parsed).value() : json::Json();
}

}  // namespace phalanx::fakes::apiserver::testing
