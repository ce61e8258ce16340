// Fault injection for the fake API server: "fail the next N requests matching a verb and a
// path with this code" (500, 429 with Retry-After, ...), and a fixed latency added to every
// request. Matching rules are consumed in the order they were added. Also the write latency, a
// property of the server (etcd's commit time) rather than a fault: Clear() keeps it.
// Thread-safe.
#pragma once

#include <chrono>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "tests/fakes/apiserver/api_error.h"

namespace phalanx::fakes::apiserver {

struct FaultRule {
  // Kubernetes verb: get, list, watch, create, update, patch, delete, deletecollection; "*" any.
  std::string verb = "*";
  std::string path_contains;  // substring of the request path; "" = any path
  int code = 500;
  int count = 1;                // how many matching requests fail
  int retry_after_seconds = 0;  // > 0: Retry-After header and details.retryAfterSeconds
  std::string message = "injected fault";
};

class FaultInjector {
 public:
  void FailNext(FaultRule rule);
  void Clear();
  // The error for this request, consuming one count of the first matching rule.
  std::optional<ApiError> Match(std::string_view verb, std::string_view path);

  void set_latency(std::chrono::milliseconds latency);
  std::chrono::milliseconds latency() const;
  // Added (after latency()) to mutating requests only.
  void set_write_latency(std::chrono::milliseconds latency);
  std::chrono::milliseconds write_latency() const;

 private:
  mutable std::mutex mu_;
  std::deque<FaultRule> rules_;
  std::chrono::milliseconds latency_{0};
  std::chrono::milliseconds write_latency_{0};
};

}  // namespace phalanx::fakes::apiserver
