// Fault injection for the fake API server: rules "fault the matching requests like this", where a
// request matches by Kubernetes verb, resource, namespace, client (User-Agent prefix) and path,
// and the fault is what a real kube-apiserver (or the network in front of it) does wrong:
//   status     an error Status (500, 503, 429 TooManyRequests with Retry-After, ...)
//   timeout    held `delay`, then 504 Timeout, as kube-apiserver's request timeout filter answers
//   reset      the connection is reset (TCP RST), no response
//   slow       served normally after `delay`
//   watch-gone (watch) a 200 stream with one ERROR event, a Status 410 Expired, then the end
//   watch-close (watch) a 200 stream that ends at once without any event (a proxy closing it)
//   watch-stall (watch) a 200 stream that sends nothing, no events and no bookmarks, for
//              `delay`, then ends: a silently dead watch only the client's idle timeout detects
// `after_apply` (timeout, reset; writes only): the write is committed first and its answer lost,
// the case where retrying a create finds AlreadyExists and retrying a bind finds it bound.
// A rule faults `count` matching requests (-1: until cleared), each with `probability`, drawn from
// a generator seeded with `seed`, so a run is reproducible for a given request order, once `after`
// matching requests went through (a crash test holds a daemon's N-th write this way). Rules are
// tried in the order they were added; the first that fires wins. How often each rule fired is kept
// (by `name`) after the rule is spent, so a test can assert its fault really happened.
// Also a latency added to every request, and the write latency, a property of the server (etcd's
// commit time) rather than a fault: Clear() keeps it. Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>

#include "core/base/result.h"
#include "core/json/json.h"
#include "tests/fakes/apiserver/api_error.h"

namespace phalanx::fakes::apiserver {

enum class FaultKind { kStatus, kTimeout, kReset, kSlow, kWatchGone, kWatchClose, kWatchStall };
std::string_view FaultKindName(FaultKind kind);
std::optional<FaultKind> ParseFaultKind(std::string_view name);

struct FaultRule {
  std::string name;  // for fired counts; "" = "rule-<n>" (n-th rule added)
  // Kubernetes verb: get, list, watch, create, update, patch, delete, deletecollection; "*" any;
  // "write" any of create, update, patch, delete, deletecollection.
  std::string verb = "*";
  // As counted (request_counts.h): "pods", "pods/binding", "nodes/status",
  // "trainingjobs.phalanx.io", "leases.coordination.k8s.io"; "" = any.
  std::string resource;
  std::string namespace_;     // "" = any (cluster-scoped requests have none)
  std::string client;         // prefix of the User-Agent ("phalanx-operator"); "" = any
  std::string path_contains;  // substring of the request path; "" = any path
  FaultKind kind = FaultKind::kStatus;
  int code = 500;               // kStatus
  int after = 0;                // matching requests let through before the rule starts faulting
  int count = 1;                // matching requests to fault; -1 = until cleared
  double probability = 1.0;     // each matching request is faulted with this probability
  uint64_t seed = 1;            // of the probability draws
  int retry_after_seconds = 0;  // kStatus: > 0 adds Retry-After and details.retryAfterSeconds
  std::chrono::milliseconds delay{0};  // kTimeout, kSlow, kWatchStall
  bool after_apply = false;            // kTimeout, kReset on a write: committed, answer lost
  std::string message;                 // kStatus; "" = the reason's usual wording
};

// {"verb":"create","resource":"pods","kind":"reset","afterApply":true,"count":1,...}: the
// /fake/faults body. InvalidArgument for an unknown kind or a field of the wrong type.
Result<FaultRule> FaultRuleFromJson(const json::Json& body);

struct FaultRequest {
  std::string_view verb, resource, namespace_, client, path;
  bool write = false;
};

// What to do with one request.
struct Fault {
  FaultKind kind = FaultKind::kStatus;
  ApiError error;  // kStatus, kTimeout (its 504), kWatchGone (its 410)
  std::chrono::milliseconds delay{0};
  bool after_apply = false;
};

class FaultInjector {
 public:
  void FailNext(FaultRule rule);
  void Clear();  // rules and latency; fired counts are kept
  // The fault for this request, consuming one count of the first rule that fires.
  std::optional<Fault> Match(const FaultRequest& request);
  // Compatibility with tests written before rules matched resources: verb and path only.
  std::optional<ApiError> Match(std::string_view verb, std::string_view path);

  // Times each rule fired, by name, since the start or ClearFired().
  std::map<std::string, uint64_t> fired() const;
  uint64_t fired(std::string_view name) const;
  void ClearFired();
  json::Json ToJson() const;  // {"rules":[...], "fired":{...}}

  void set_latency(std::chrono::milliseconds latency);
  std::chrono::milliseconds latency() const;
  // Added (after latency()) to mutating requests only.
  void set_write_latency(std::chrono::milliseconds latency);
  std::chrono::milliseconds write_latency() const;

 private:
  struct Active {
    FaultRule rule;
    std::mt19937_64 rng;
  };

  mutable std::mutex mu_;
  std::deque<Active> rules_;
  uint64_t added_ = 0;
  std::map<std::string, uint64_t, std::less<>> fired_;
  std::chrono::milliseconds latency_{0};
  std::chrono::milliseconds write_latency_{0};
};

}  // namespace phalanx::fakes::apiserver
