// FakeApiServer: an in-memory Kubernetes API server over real HTTP(S), for tests of the
// extender, operator, device plugin and kube client. Start it on an ephemeral port, point a
// client at url() (or at a kubeconfig from WriteKubeconfig), and use the direct access and
// wait helpers below to arrange and check state. Semantics live in Store (store.h); the HTTP
// mapping in ApiRouter (api_router.h); limits of the simulation in README.md.
//
//   auto server = FakeApiServer::Start().value();
//   server->Create("pods", pod_json);
//   auto bound = server->WaitFor("pods", "ml", "w-0",
//                                [](const json::Json& p) { return p["spec"].contains("nodeName"); });
//
// Thread-safe: every method may be called from any thread (not from inside a watch sink).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/result.h"
#include "core/http/http_server.h"
#include "core/json/json.h"
#include "tests/fakes/apiserver/api_router.h"
#include "tests/fakes/apiserver/faults.h"
#include "tests/fakes/apiserver/kind_registry.h"
#include "tests/fakes/apiserver/scheduler.h"
#include "tests/fakes/apiserver/store.h"
#include "tests/fakes/apiserver/token_registry.h"

namespace phalanx::fakes::apiserver {

inline constexpr std::chrono::milliseconds kDefaultWait{20000};

struct FakeApiServerOptions {
  std::string address = "127.0.0.1";
  uint16_t port = 0;  // 0 = ephemeral
  std::optional<http::TlsOptions> tls;
  size_t event_window = 100000;  // events kept for watch resumption (older: 410 Expired)
  std::chrono::milliseconds bookmark_interval{1000};  // for watches with allowWatchBookmarks
  bool gone_as_http_status = false;  // too old watch version: HTTP 410 instead of an ERROR event
  std::optional<std::string> required_token;  // set: only it and AddToken() tokens are accepted
  bool eviction_disruption_condition = true;
  // Added to every mutating request (create/update/patch/delete/binding/eviction), not to reads
  // or watches; concurrent requests wait concurrently, as writes to etcd do.
  std::chrono::milliseconds write_latency{0};
  // Set: play the kubelet, finishing a pod's graceful deletion (a delete with grace 0) this long
  // after it started. Unset: terminating pods stay until a client deletes them with grace 0.
  std::optional<std::chrono::milliseconds> pod_termination_delay;
  int io_threads = 2;
  std::shared_ptr<spdlog::logger> logger;  // null = spdlog's default
};

class FakeApiServer {
 public:
  static Result<std::unique_ptr<FakeApiServer>> Start(FakeApiServerOptions options = {});
  ~FakeApiServer();
  FakeApiServer(const FakeApiServer&) = delete;
  FakeApiServer& operator=(const FakeApiServer&) = delete;

  uint16_t port() const { return port_; }
  std::string url() const;  // "http://127.0.0.1:PORT" (https with TLS)
  // A kubeconfig (YAML) with one cluster/user/context "fake" pointing at url(); with TLS,
  // `ca_file` becomes certificate-authority (empty: insecure-skip-tls-verify).
  std::string Kubeconfig(std::string_view token = "fake-token", std::string_view ca_file = "") const;
  Status WriteKubeconfig(const std::string& path, std::string_view token = "fake-token",
                         std::string_view ca_file = "") const;

  KindRegistry& kinds() { return kinds_; }
  Store& store() { return *store_; }

  // Direct object access, with the same semantics as the HTTP verbs. `resource` is "pods" or
  // "plural.group" ("trainingjobs.phalanx.io", "leases.coordination.k8s.io"). Errors carry the
  // API's code: NotFound, AlreadyExists, Aborted (409 Conflict), InvalidArgument (400/422),
  // OutOfRange (410).
  Result<json::Json> Create(std::string_view resource, json::Json object);
  // Inserts objects exactly as given (status included), looked up by apiVersion and kind;
  // missing uid/creationTimestamp are filled in. Replaces an object of the same name.
  Result<json::Json> Seed(json::Json object);
  Result<json::Json> Get(std::string_view resource, std::string_view namespace_,
                         std::string_view name);
  Result<std::vector<json::Json>> List(std::string_view resource, std::string_view namespace_ = "",
                                       std::string_view label_selector = "",
                                       std::string_view field_selector = "");
  Result<json::Json> Update(std::string_view resource, json::Json object);
  Result<json::Json> UpdateStatus(std::string_view resource, json::Json object);
  // `field_manager`: server-side apply's manager (PatchType::kApply).
  Result<json::Json> Patch(std::string_view resource, std::string_view namespace_,
                           std::string_view name, PatchType type, std::string_view patch,
                           bool status = false, std::string_view field_manager = "");
  // The object's last state when it is gone, or its terminating state.
  Result<json::Json> Delete(std::string_view resource, std::string_view namespace_,
                            std::string_view name, const DeleteOptions& options = {});
  uint64_t resource_version() const { return store_->resource_version(); }

  // Waits (without sleeping: wakes on every write) until the object exists and `predicate`
  // holds; DeadlineExceeded with the last state otherwise.
  Result<json::Json> WaitFor(std::string_view resource, std::string_view namespace_,
                             std::string_view name,
                             const std::function<bool(const json::Json&)>& predicate = nullptr,
                             std::chrono::milliseconds deadline = kDefaultWait);
  Status WaitForGone(std::string_view resource, std::string_view namespace_, std::string_view name,
                     std::chrono::milliseconds deadline = kDefaultWait);
  // Until exactly `count` objects match.
  Result<std::vector<json::Json>> WaitForCount(std::string_view resource, std::string_view namespace_,
                                               std::string_view label_selector, size_t count,
                                               std::chrono::milliseconds deadline = kDefaultWait);
  // Until exactly `count` watch streams are open.
  bool WaitForWatches(size_t count, std::chrono::milliseconds deadline = kDefaultWait);
  size_t watch_count();

  // Fault injection.
  void FailNext(FaultRule rule) { faults_.FailNext(std::move(rule)); }
  void ClearFaults() { faults_.Clear(); }
  // The rules left and how often each fired (by name), e.g. faults().fired("bind-reset").
  const FaultInjector& faults() const { return faults_; }
  void SetLatency(std::chrono::milliseconds latency) { faults_.set_latency(latency); }
  // FakeApiServerOptions::write_latency, changed while serving (ClearFaults() keeps it).
  void SetWriteLatency(std::chrono::milliseconds latency) { faults_.set_write_latency(latency); }
  void DropWatches() { store_->DropAllWatches(); }  // every stream ends (apiserver restart)
  void CompactHistory() { store_->CompactHistory(); }  // every older version now 410
  // Stops serving: connections are refused until ComeUp(), which listens on the same port.
  // Objects are kept (like an apiserver restart over the same etcd).
  void GoDown();
  Status ComeUp();
  bool down() const;

  // Authentication.
  void AddToken(std::string token, TokenUser user) { tokens_.Add(std::move(token), std::move(user)); }

  // Requests served so far (bounded), oldest first.
  std::vector<RecordedRequest> Requests() const { return log_.Snapshot(); }
  void ClearRequests() { log_.Clear(); }
  // Requests by client (User-Agent) x verb x resource since the start or the last clear
  // (request_counts.h); not bounded like Requests(), so traffic budgets can be asserted.
  const RequestCounts& request_counts() const { return counts_; }
  uint64_t RequestCount(std::string_view client, std::string_view verb, std::string_view resource) const {
    return counts_.Count(client, verb, resource);
  }
  void ClearRequestCounts() { counts_.Clear(); }
  // Admission webhook calls made for pod creates, oldest first (mutating_admission.h).
  std::vector<WebhookCall> WebhookCalls() const;

 private:
  explicit FakeApiServer(FakeApiServerOptions options);
  Status Listen(uint16_t port);
  void ScheduleTicks();
  Result<KindInfo> Kind(std::string_view resource) const;

  const FakeApiServerOptions options_;
  KindRegistry kinds_;
  FaultInjector faults_;
  TokenRegistry tokens_;
  RequestLog log_;
  RequestCounts counts_;
  mutable std::mutex webhook_calls_mu_;
  std::vector<WebhookCall> webhook_calls_;  // guarded by webhook_calls_mu_
  Scheduler scheduler_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<ApiRouter> router_;

  mutable std::mutex server_mu_;
  std::unique_ptr<http::HttpServer> server_;  // null while down
  uint16_t port_ = 0;
};

// The Status for an API error (codes as core/kube's errors: 409 Conflict -> Aborted, ...).
Status ToStatus(const ApiError& error);

}  // namespace phalanx::fakes::apiserver
