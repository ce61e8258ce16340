// KubeClient: typed-enough REST access to the Kubernetes API (objects are nlohmann::json at this
// level; informers decode them into lean structs, see informer.h).
//
// Every call goes through Do(): bearer token (re-read from token_file at most once a minute),
// client-side QPS/burst token bucket, per-request timeout, and retries with exponential backoff
// on 429/5xx honouring Retry-After (seconds) — always for reads; for writes only on 429, 503,
// or when the server sent Retry-After (so a create is never repeated after the server may have
// applied it). Failures come back as Status built by api_error.h (IsConflict(), IsNotFound()...).
//
// Requests are exactly what kube-apiserver expects: core vs named group paths (resource.h),
// Accept: application/json; bodies application/json, merge patches
// application/merge-patch+json, JSON patches application/json-patch+json, server-side apply
// application/apply-patch+yaml with ?fieldManager=&force=.
//
// Thread-safe: one client is shared by all of a daemon's threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/base/backoff.h"
#include "core/base/clock.h"
#include "core/base/result.h"
#include "core/json/json.h"
#include "core/kube/api_error.h"
#include "core/kube/config.h"
#include "core/kube/rate_limiter.h"
#include "core/kube/resource.h"
#include "core/kube/transport.h"

namespace phalanx::kube {

using Json = nlohmann::json;

struct ClientOptions {
  // Client-side limit for all requests of this client (client-go defaults 5/10 are far too
  // low for thousands of objects). qps <= 0 disables it.
  double qps = 50;
  int burst = 100;
  std::chrono::milliseconds timeout{30'000};  // per request, when a call does not say
  int max_retries = 5;                        // extra attempts after the first
  Backoff::Options retry_backoff{std::chrono::milliseconds(100), std::chrono::milliseconds(5'000),
                                 std::chrono::milliseconds(0), true};
  std::chrono::seconds max_retry_after{60};  // caps a server's Retry-After
  std::string user_agent = "phalanx";        // e.g. "phalanx-extender/0.1.0"
  std::chrono::seconds token_refresh{60};    // re-read token_file this often
  const Clock* clock = nullptr;              // null = RealClock
  std::function<void(Duration)> sleep;       // null = std::this_thread::sleep_for (tests inject)
  // Called after every attempt (retries included) with the method, the HTTP status (0 for a
  // network error or timeout) and the latency: the hook for a daemon's request metrics
  // (core/kube does not depend on core/metrics). Must be thread-safe and quick.
  std::function<void(std::string_view method, int status, Duration latency)> observer;
};

struct ListOptions {
  std::string label_selector;  // "app=x,tier!=spot"
  std::string field_selector;  // "spec.nodeName=node-1"
  std::string resource_version;
  std::string resource_version_match;  // "NotOlderThan" | "Exact" | ""
  std::string continue_token;
  int64_t limit = 0;  // page size; 0 = server default (everything)
  std::chrono::milliseconds timeout{0};
};

struct WriteOptions {
  std::string field_manager;
  bool dry_run = false;
  std::string subresource;  // "status", "scale", ...
  std::chrono::milliseconds timeout{0};
};

enum class PatchType { kMerge, kJsonPatch, kStrategicMerge, kApply };
std::string_view PatchContentType(PatchType type);

struct PatchOptions {
  std::string field_manager;  // required for kApply
  bool force = false;         // kApply only: take ownership of conflicting fields
  bool dry_run = false;
  std::string subresource;
  std::chrono::milliseconds timeout{0};
};

struct DeleteOptions {
  std::optional<int64_t> grace_period_seconds;
  std::string propagation_policy;  // "Foreground" | "Background" | "Orphan" | ""
  std::string precondition_uid;
  std::string precondition_resource_version;
  bool dry_run = false;
  std::chrono::milliseconds timeout{0};
};

// Per-call overrides for Do().
struct CallOptions {
  std::optional<int> max_retries;
  bool retry_on_too_many_requests = true;  // eviction: 429 means "PDB says no", not "slow down"
};

class KubeClient {
 public:
  KubeClient(std::shared_ptr<Transport> transport, KubeConfig config, ClientOptions options = {});
  ~KubeClient();
  KubeClient(const KubeClient&) = delete;
  KubeClient& operator=(const KubeClient&) = delete;

  // A client over the cpprestsdk transport for `config`.
  static Result<std::unique_ptr<KubeClient>> Create(const KubeConfig& config, ClientOptions options = {});

  Result<Json> Get(const Resource& r, std::string_view ns, std::string_view name,
                   std::string_view subresource = {});
  // One page: {"metadata": {"resourceVersion", "continue"}, "items": [...]}.
  Result<Json> List(const Resource& r, std::string_view ns, const ListOptions& options = {});
  // One page as the raw response body (for tree-free readers, raw_object.h).
  Result<std::string> ListRaw(const Resource& r, std::string_view ns, const ListOptions& options = {});
  // Follows `continue` tokens page by page (page size options.limit, default 500), calling
  // `on_page` with each page; stops at the first error (from the server or from on_page).
  // Returns the list's resourceVersion (to start a watch from).
  Result<std::string> ListPages(const Resource& r, std::string_view ns, ListOptions options,
                                const std::function<Status(Json& page)>& on_page);
  // All pages merged into one list object.
  Result<Json> ListAll(const Resource& r, std::string_view ns, ListOptions options = {});

  Result<Json> Create(const Resource& r, std::string_view ns, const Json& object,
                      const WriteOptions& options = {});
  // PUT; the name comes from object.metadata.name. Fails with Conflict when
  // metadata.resourceVersion is stale.
  Result<Json> Update(const Resource& r, std::string_view ns, const Json& object,
                      const WriteOptions& options = {});
  Result<Json> UpdateStatus(const Resource& r, std::string_view ns, const Json& object,
                            WriteOptions options = {});
  Result<Json> Patch(const Resource& r, std::string_view ns, std::string_view name, PatchType type,
                     std::string_view patch, const PatchOptions& options = {});
  Result<Json> Patch(const Resource& r, std::string_view ns, std::string_view name, PatchType type,
                     const Json& patch, const PatchOptions& options = {});
  // Server-side apply of `object` (must carry apiVersion/kind/metadata.name).
  Result<Json> Apply(const Resource& r, std::string_view ns, const Json& object,
                     std::string_view field_manager, bool force = false, std::string_view subresource = {});
  // Returns what the server returned (the object, now with deletionTimestamp, or a Status).
  Result<Json> Delete(const Resource& r, std::string_view ns, std::string_view name,
                      const DeleteOptions& options = {});

  // POST pods/<pod>/binding. `pod_uid` non-empty adds a UID precondition.
  Status Bind(std::string_view ns, std::string_view pod, std::string_view node,
              std::string_view pod_uid = {});
  // POST pods/<pod>/eviction (policy/v1). A PDB refusal is TooManyRequests, returned at once.
  Status Evict(std::string_view ns, std::string_view pod, const DeleteOptions& options = {});

  // The raw exchange with auth, rate limit and retries; non-2xx responses are returned, not
  // turned into errors (use CheckResponse).
  Result<HttpResponse> Do(HttpRequest request, const CallOptions& call = {});
  // Opens a streaming request (watch) with auth and rate limit, no retries.
  Result<std::unique_ptr<ResponseStream>> OpenStream(HttpRequest request);

  // OK for 2xx; otherwise the decoded API error.
  static Status CheckResponse(const HttpResponse& response);

  const KubeConfig& config() const { return config_; }
  const ClientOptions& options() const { return options_; }
  const Clock& clock() const { return *clock_; }
  void Sleep(Duration d) const;
  // Requests sent (including retries); for tests and metrics.
  uint64_t requests_sent() const;

 private:
  Result<Json> SendJson(HttpRequest request, const CallOptions& call = {});
  void Authorize(HttpRequest& request);
  std::string BearerToken();

  std::shared_ptr<Transport> transport_;
  KubeConfig config_;
  ClientOptions options_;
  const Clock* clock_;
  TokenBucket limiter_;
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace phalanx::kube
