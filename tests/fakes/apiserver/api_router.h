// ApiRouter: turns HTTP requests on /api and /apis into Store calls, with Kubernetes' verbs,
// query parameters (watch, resourceVersion, labelSelector, fieldSelector, limit, continue,
// timeoutSeconds, allowWatchBookmarks, gracePeriodSeconds, propagationPolicy, fieldManager),
// content types and Status errors. Also serves discovery (/api, /apis, /api/v1, /apis/<g>/<v>)
// and /version, authentication, fault injection and latency.
// Thread-safe: Handle() runs on any io thread; all state is in the referenced objects.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "core/http/http_server.h"
#include "tests/fakes/apiserver/faults.h"
#include "tests/fakes/apiserver/kind_registry.h"
#include "tests/fakes/apiserver/mutating_admission.h"
#include "tests/fakes/apiserver/request_counts.h"
#include "tests/fakes/apiserver/scheduler.h"
#include "tests/fakes/apiserver/store.h"
#include "tests/fakes/apiserver/token_registry.h"

namespace phalanx::fakes::apiserver {

struct RecordedRequest {
  std::string verb;    // Kubernetes verb ("list", "watch", "create", ...) or "" for other paths
  std::string method;  // HTTP method
  std::string target;  // path and query as sent
  std::string content_type;
  std::string body;    // the request body (first 64 KiB)
  int code = 0;        // answered status (a watch: 200 once it started)
};

// Bounded log of the requests served, for assertions ("exactly one binding was POSTed").
class RequestLog {
 public:
  void Add(RecordedRequest request);
  std::vector<RecordedRequest> Snapshot() const;
  void Clear();

 private:
  mutable std::mutex mu_;
  std::deque<RecordedRequest> requests_;
};

struct RouterOptions {
  bool gone_as_http_status = false;  // watch from a too old version: HTTP 410 (else ERROR event)
  RequestCounts* counts = nullptr;   // set: every request counted by client x verb x resource
  // Sees every admission webhook call made for a pod create (mutating_admission.h).
  std::function<void(const WebhookCall&)> on_webhook_call;
};

class ApiRouter {
 public:
  ApiRouter(Store& store, KindRegistry& kinds, FaultInjector& faults, TokenRegistry& tokens,
            Scheduler& scheduler, RequestLog& log, RouterOptions options);

  void Handle(http::Request&& request, http::ResponseWriter&& writer);

 private:
  // `replay`: the request was counted and its faults decided already (a delayed or faulted
  // request served now).
  void Serve(http::Request& request, http::ResponseWriter& writer, bool replay = false);
  void ServeFault(http::Request& request, http::ResponseWriter& writer, const std::string& verb,
                  const Fault& fault);
  void Count(const http::Request& request, std::string_view verb, std::string_view resource);
  void ServeWatch(http::Request& request, const struct ResourcePath& path,
                  http::ResponseWriter& writer);
  void Reply(http::Request& request, http::ResponseWriter& writer, std::string_view verb, int code,
             std::string body);
  void ReplyError(http::Request& request, http::ResponseWriter& writer, std::string_view verb,
                  const ApiError& error);

  Store& store_;
  KindRegistry& kinds_;
  FaultInjector& faults_;
  TokenRegistry& tokens_;
  Scheduler& scheduler_;
  RequestLog& log_;
  const RouterOptions options_;
  const MutatingAdmission admission_;
};

}  // namespace phalanx::fakes::apiserver
