// Transport: the HTTP exchange under KubeClient, an interface so tests and a future alternative
// (e.g. a Beast client) can swap it. The cpprestsdk implementation is in cpprest_transport.h.
//
// A transport knows the server's base URL and TLS material; it adds nothing else (auth headers,
// retries and rate limits are KubeClient's). Non-2xx answers are responses, not errors: only
// network failures, TLS failures and timeouts are errors (kUnavailable / kDeadlineExceeded).
// Implementations are thread-safe.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/result.h"

namespace phalanx::kube {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method = "GET";
  std::string target;  // path + query, already escaped: "/api/v1/pods?limit=500"
  HeaderList headers;
  std::string content_type;  // for the body; "" = no body
  std::string body;
  // Gives up when no progress was made this long (connect, send, or waiting for bytes). 0 = the
  // transport's default.
  std::chrono::milliseconds timeout{0};
};

struct HttpResponse {
  int status = 0;
  HeaderList headers;
  std::string body;
  // Case-insensitive; "" when absent.
  std::string_view Header(std::string_view name) const;
};

// A streaming response body (watch). ReadLine blocks until a full '\n'-terminated line (without
// the '\n') is available: true; the stream ended cleanly: false; error on network failure,
// idle timeout, or Cancel().
class ResponseStream {
 public:
  virtual ~ResponseStream() = default;
  virtual int status() const = 0;
  virtual const HeaderList& headers() const = 0;
  virtual Result<bool> ReadLine(std::string& line) = 0;
  // Unblocks a pending ReadLine from any thread; later reads fail with kCancelled.
  virtual void Cancel() = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual Result<HttpResponse> Send(const HttpRequest& request) = 0;
  // Returns once the status line and headers arrived; the body is read through the stream.
  virtual Result<std::unique_ptr<ResponseStream>> OpenStream(const HttpRequest& request) = 0;
};

std::string_view FindHeader(const HeaderList& headers, std::string_view name);

}  // namespace phalanx::kube
