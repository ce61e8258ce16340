#include "core/kube/client.h"

#include <atomic>
#include <charconv>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/kube/cpprest_transport.h"

namespace phalanx::kube {

struct KubeClient::State {
  std::mutex token_mu;
  std::string token;
  std::optional<MonotonicTime> token_read_at;
  std::atomic<uint64_t> requests{0};
  std::mutex backoff_mu;
  std::mt19937_64 rng{std::random_device{}()};
};

namespace {

bool Idempotent(std::string_view method) { return method == "GET" || method == "HEAD"; }

// Retry-After in seconds (the API server never sends the HTTP-date form).
std::optional<int> RetryAfterSeconds(const HttpResponse& response) {
  std::string_view v = response.Header("Retry-After");
  int seconds = 0;
  if (v.empty()) return std::nullopt;
  auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), seconds);
  if (ec != std::errc() || seconds < 0) return std::nullopt;
  return seconds;
}

void AddListParams(std::vector<std::pair<std::string, std::string>>& q, const ListOptions& o) {
  if (!o.label_selector.empty()) q.emplace_back("labelSelector", o.label_selector);
  if (!o.field_selector.empty()) q.emplace_back("fieldSelector", o.field_selector);
  if (o.limit > 0) q.emplace_back("limit", std::to_string(o.limit));
  if (!o.continue_token.empty()) q.emplace_back("continue", o.continue_token);
  if (!o.resource_version.empty()) q.emplace_back("resourceVersion", o.resource_version);
  if (!o.resource_version_match.empty()) q.emplace_back("resourceVersionMatch", o.resource_version_match);
}

Json DeleteOptionsBody(const DeleteOptions& o) {
  Json body = {{"kind", "DeleteOptions"}, {"apiVersion", "v1"}};
  if (o.grace_period_seconds) body["gracePeriodSeconds"] = *o.grace_period_seconds;
  if (!o.propagation_policy.empty()) body["propagationPolicy"] = o.propagation_policy;
  if (!o.precondition_uid.empty()) body["preconditions"]["uid"] = o.precondition_uid;
  if (!o.precondition_resource_version.empty()) {
    body["preconditions"]["resourceVersion"] = o.precondition_resource_version;
  }
  if (o.dry_run) body["dryRun"] = Json::array({"All"});
  return body;
}

std::string NameOf(const Json& object) {
  if (!object.is_object()) return {};
  auto m = object.find("metadata");
  if (m == object.end() || !m->is_object()) return {};
  auto n = m->find("name");
  return n != m->end() && n->is_string() ? n->get<std::string>() : std::string();
}

}  // namespace

std::string_view PatchContentType(PatchType type) {
  switch (type) {
    case PatchType::kMerge: return "application/merge-patch+json";
    case PatchType::kJsonPatch: return "application/json-patch+json";
    case PatchType::kStrategicMerge: return "application/strategic-merge-patch+json";
    case PatchType::kApply: return "application/apply-patch+yaml";
  }
  return "application/merge-patch+json";
}

KubeClient::KubeClient(std::shared_ptr<Transport> transport, KubeConfig config, ClientOptions options)
    : transport_(std::move(transport)),
      config_(std::move(config)),
      options_(std::move(options)),
      clock_(options_.clock ? options_.clock : &RealClock::Instance()),
      limiter_(options_.qps, options_.burst, *clock_),
      state_(std::make_unique<State>()) {}

KubeClient::~KubeClient() = default;

Result<std::unique_ptr<KubeClient>> KubeClient::Create(const KubeConfig& config, ClientOptions options) {
  CpprestTransportOptions topts;
  topts.default_timeout = options.timeout;
  PHX_ASSIGN_OR_RETURN(std::unique_ptr<Transport> transport, MakeCpprestTransport(config, topts));
  return std::make_unique<KubeClient>(std::shared_ptr<Transport>(std::move(transport)), config,
                                      std::move(options));
}

void KubeClient::Sleep(Duration d) const {
  if (d <= Duration::zero()) return;
  if (options_.sleep) {
    options_.sleep(d);
  } else {
    std::this_thread::sleep_for(d);
  }
}

uint64_t KubeClient::requests_sent() const { return state_->requests.load(); }

std::string KubeClient::BearerToken() {
  if (config_.token_file.empty()) return config_.token;
  std::lock_guard lock(state_->token_mu);
  const MonotonicTime now = clock_->Now();
  if (!state_->token_read_at || now - *state_->token_read_at >= options_.token_refresh) {
    std::ifstream in(config_.token_file);
    if (in) {
      std::ostringstream ss;
      ss << in.rdbuf();
      std::string t = ss.str();
      while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) t.pop_back();
      state_->token = std::move(t);
    } else {
      // Keep the last good token: the kubelet rewrites the file atomically but briefly.
      spdlog::warn("kube client: cannot read token file {}", config_.token_file);
    }
    state_->token_read_at = now;
  }
  return state_->token;
}

void KubeClient::Authorize(HttpRequest& request) {
  if (FindHeader(request.headers, "Accept").empty()) request.headers.emplace_back("Accept", "application/json");
  request.headers.emplace_back("User-Agent", options_.user_agent);
  if (std::string token = BearerToken(); !token.empty()) {
    request.headers.emplace_back("Authorization", "Bearer " + token);
  }
  if (request.timeout.count() <= 0) request.timeout = options_.timeout;
}

Result<HttpResponse> KubeClient::Do(HttpRequest request, const CallOptions& call) {
  Authorize(request);
  const int max_retries = call.max_retries.value_or(options_.max_retries);
  Backoff backoff(options_.retry_backoff, [&] {
    std::lock_guard lock(state_->backoff_mu);
    return state_->rng();
  }());
  for (int attempt = 0;; ++attempt) {
    Sleep(limiter_.Reserve());
    state_->requests.fetch_add(1);
    const MonotonicTime started = clock_->Now();
    Result<HttpResponse> response = transport_->Send(request);
    if (options_.observer) {
      options_.observer(request.method, response.ok() ? response->status : 0, clock_->Now() - started);
    }
    const bool can_retry = attempt < max_retries;
    if (!response.ok()) {
      // A write may have reached the server before the connection broke: only reads retry.
      if (can_retry && Idempotent(request.method) &&
          response.status().code() != StatusCode::kCancelled) {
        const auto delay = backoff.Next();
        spdlog::debug("kube client: {} {} failed ({}), retry in {} ms", request.method, request.target,
                      response.status().message(), delay.count());
        Sleep(delay);
        continue;
      }
      return response;
    }
    const int code = response->status;
    const std::optional<int> retry_after = RetryAfterSeconds(*response);
    bool retryable = false;
    if (code == 429) {
      retryable = call.retry_on_too_many_requests;
    } else if (code >= 500 && code <= 599) {
      retryable = Idempotent(request.method) || code == 503 || retry_after.has_value();
    }
    if (!retryable || !can_retry) return response;
    Duration delay = backoff.Next();
    if (retry_after) {
      delay = std::min<Duration>(std::chrono::seconds(*retry_after), options_.max_retry_after);
    }
    spdlog::debug("kube client: {} {} -> HTTP {}, retry {} in {} ms", request.method, request.target, code,
                  attempt + 1, std::chrono::duration_cast<std::chrono::milliseconds>(delay).count());
    Sleep(delay);
  }
}

Result<std::unique_ptr<ResponseStream>> KubeClient::OpenStream(HttpRequest request) {
  Authorize(request);
  Sleep(limiter_.Reserve());
  state_->requests.fetch_add(1);
  const MonotonicTime started = clock_->Now();
  auto stream = transport_->OpenStream(request);
  if (options_.observer) {
    options_.observer("WATCH", stream.ok() ? (*stream)->status() : 0, clock_->Now() - started);
  }
  return stream;
}

Status KubeClient::CheckResponse(const HttpResponse& response) {
  if (response.status >= 200 && response.status < 300) return OkStatus();
  return ToStatus(DecodeApiError(response.status, response.body));
}

Result<Json> KubeClient::SendJson(HttpRequest request, const CallOptions& call) {
  const std::string what = request.method + " " + request.target;
  PHX_ASSIGN_OR_RETURN(HttpResponse response, Do(std::move(request), call));
  PHX_RETURN_IF_ERROR(CheckResponse(response));
  if (response.body.empty()) return Json::object();
  auto parsed = json::Parse(response.body);
  if (!parsed.ok()) return parsed.status().WithContext(what + ": response body");
  return std::move(*parsed);
}

Result<Json> KubeClient::Get(const Resource& r, std::string_view ns, std::string_view name,
                             std::string_view subresource) {
  HttpRequest req;
  req.target = ResourcePath(r, ns, name, subresource);
  return SendJson(std::move(req));
}

Result<Json> KubeClient::List(const Resource& r, std::string_view ns, const ListOptions& options) {
  std::vector<std::pair<std::string, std::string>> q;
  AddListParams(q, options);
  HttpRequest req;
  req.target = ResourcePath(r, ns) + QueryString(q);
  req.timeout = options.timeout;
  return SendJson(std::move(req));
}

Result<std::string> KubeClient::ListRaw(const Resource& r, std::string_view ns, const ListOptions& options) {
  std::vector<std::pair<std::string, std::string>> q;
  AddListParams(q, options);
  HttpRequest req;
  req.target = ResourcePath(r, ns) + QueryString(q);
  req.timeout = options.timeout;
  PHX_ASSIGN_OR_RETURN(HttpResponse response, Do(std::move(req)));
  PHX_RETURN_IF_ERROR(CheckResponse(response));
  return std::move(response.body);
}

Result<std::string> KubeClient::ListPages(const Resource& r, std::string_view ns, ListOptions options,
                                          const std::function<Status(Json& page)>& on_page) {
  if (options.limit <= 0) options.limit = 500;
  std::string resource_version;
  while (true) {
    PHX_ASSIGN_OR_RETURN(Json page, List(r, ns, options));
    std::string next;
    if (auto m = page.find("metadata"); m != page.end() && m->is_object()) {
      if (auto rv = m->find("resourceVersion"); rv != m->end() && rv->is_string()) {
        resource_version = rv->get<std::string>();
      }
      if (auto c = m->find("continue"); c != m->end() && c->is_string()) next = c->get<std::string>();
    }
    PHX_RETURN_IF_ERROR(on_page(page));
    if (next.empty()) return resource_version;
    options.continue_token = std::move(next);
    // Continuation pages are served from the first page's snapshot; no RV may be given.
    options.resource_version.clear();
    options.resource_version_match.clear();
  }
}

Result<Json> KubeClient::ListAll(const Resource& r, std::string_view ns, ListOptions options) {
  Json all = {{"apiVersion", r.ApiVersion()}, {"kind", r.kind.empty() ? "List" : r.kind + "List"},
              {"metadata", Json::object()}, {"items", Json::array()}};
  PHX_ASSIGN_OR_RETURN(std::string rv, ListPages(r, ns, std::move(options), [&](Json& page) {
                         if (auto it = page.find("items"); it != page.end() && it->is_array()) {
                           for (auto& item : *it) all["items"].push_back(std::move(item));
                         }
                         return OkStatus();
                       }));
  all["metadata"]["resourceVersion"] = rv;
  return all;
}

namespace {
std::vector<std::pair<std::string, std::string>> WriteQuery(std::string_view field_manager, bool dry_run) {
  std::vector<std::pair<std::string, std::string>> q;
  if (!field_manager.empty()) q.emplace_back("fieldManager", std::string(field_manager));
  if (dry_run) q.emplace_back("dryRun", "All");
  return q;
}
}  // namespace

Result<Json> KubeClient::Create(const Resource& r, std::string_view ns, const Json& object,
                                const WriteOptions& options) {
  HttpRequest req;
  req.method = "POST";
  // Creating a subresource (pods/x/binding) addresses the parent by name.
  req.target = options.subresource.empty()
                   ? ResourcePath(r, ns)
                   : ResourcePath(r, ns, NameOf(object), options.subresource);
  req.target += QueryString(WriteQuery(options.field_manager, options.dry_run));
  req.content_type = "application/json";
  req.body = json::Dump(object);
  req.timeout = options.timeout;
  return SendJson(std::move(req));
}

Result<Json> KubeClient::Update(const Resource& r, std::string_view ns, const Json& object,
                                const WriteOptions& options) {
  const std::string name = NameOf(object);
  if (name.empty()) return InvalidArgumentError("update " + r.resource + ": object has no metadata.name");
  HttpRequest req;
  req.method = "PUT";
  req.target = ResourcePath(r, ns, name, options.subresource) +
               QueryString(WriteQuery(options.field_manager, options.dry_run));
  req.content_type = "application/json";
  req.body = json::Dump(object);
  req.timeout = options.timeout;
  return SendJson(std::move(req));
}

Result<Json> KubeClient::UpdateStatus(const Resource& r, std::string_view ns, const Json& object,
                                      WriteOptions options) {
  options.subresource = "status";
  return Update(r, ns, object, options);
}

Result<Json> KubeClient::Patch(const Resource& r, std::string_view ns, std::string_view name,
                               PatchType type, std::string_view patch, const PatchOptions& options) {
  if (name.empty()) return InvalidArgumentError("patch " + r.resource + ": empty name");
  if (type == PatchType::kApply && options.field_manager.empty()) {
    return InvalidArgumentError("server-side apply needs a field manager");
  }
  auto q = WriteQuery(options.field_manager, options.dry_run);
  if (type == PatchType::kApply && options.force) q.emplace_back("force", "true");
  HttpRequest req;
  req.method = "PATCH";
  req.target = ResourcePath(r, ns, name, options.subresource) + QueryString(q);
  req.content_type = std::string(PatchContentType(type));
  req.body = std::string(patch);
  req.timeout = options.timeout;
  return SendJson(std::move(req));
}

Result<Json> KubeClient::Patch(const Resource& r, std::string_view ns, std::string_view name,
                               PatchType type, const Json& patch, const PatchOptions& options) {
  return Patch(r, ns, name, type, std::string_view(json::Dump(patch)), options);
}

Result<Json> KubeClient::Apply(const Resource& r, std::string_view ns, const Json& object,
                               std::string_view field_manager, bool force, std::string_view subresource) {
  PatchOptions options;
  options.field_manager = std::string(field_manager);
  options.force = force;
  options.subresource = std::string(subresource);
  return Patch(r, ns, NameOf(object), PatchType::kApply, object, options);
}

Result<Json> KubeClient::Delete(const Resource& r, std::string_view ns, std::string_view name,
                                const DeleteOptions& options) {
  if (name.empty()) return InvalidArgumentError("delete " + r.resource + ": empty name");
  HttpRequest req;
  req.method = "DELETE";
  req.target = ResourcePath(r, ns, name);
  req.content_type = "application/json";
  req.body = json::Dump(DeleteOptionsBody(options));
  req.timeout = options.timeout;
  return SendJson(std::move(req));
}

Status KubeClient::Bind(std::string_view ns, std::string_view pod, std::string_view node,
                        std::string_view pod_uid) {
  Json binding = {{"apiVersion", "v1"},
                  {"kind", "Binding"},
                  {"metadata", {{"name", pod}, {"namespace", ns}}},
                  {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}};
  if (!pod_uid.empty()) binding["metadata"]["uid"] = pod_uid;
  HttpRequest req;
  req.method = "POST";
  req.target = ResourcePath(resources::kPods, ns, pod, "binding");
  req.content_type = "application/json";
  req.body = json::Dump(binding);
  return SendJson(std::move(req)).status();
}

Status KubeClient::Evict(std::string_view ns, std::string_view pod, const DeleteOptions& options) {
  Json eviction = {{"apiVersion", "policy/v1"},
                   {"kind", "Eviction"},
                   {"metadata", {{"name", pod}, {"namespace", ns}}}};
  Json del = DeleteOptionsBody(options);
  if (del.size() > 2) eviction["deleteOptions"] = std::move(del);
  HttpRequest req;
  req.method = "POST";
  req.target = ResourcePath(resources::kPods, ns, pod, "eviction");
  req.content_type = "application/json";
  req.body = json::Dump(eviction);
  req.timeout = options.timeout;
  CallOptions call;
  call.retry_on_too_many_requests = false;
  return SendJson(std::move(req), call).status();
}

}  // namespace phalanx::kube
