#include "tests/fakes/apiserver/fake_apiserver.h"

#include <fstream>

#include <fmt/format.h>

#include "tests/fakes/apiserver/control_endpoints.h"

namespace phalanx::fakes::apiserver {
namespace {

template <typename T>
Result<T> Unwrap(ApiResult<T> r) {
  if (!IsOk(r)) return ToStatus(std::get<ApiError>(r));
  return std::move(std::get<T>(r));
}

Result<json::Json> ObjectOrError(const ApiResult<ObjectPtr>& r) {
  if (!IsOk(r)) return ToStatus(std::get<ApiError>(r));
  return std::get<ObjectPtr>(r)->Parse();
}

std::string MetaField(const json::Json& object, const char* field) {
  if (!object.is_object() || !object.contains("metadata") || !object["metadata"].is_object()) return "";
  return object["metadata"].value(field, "");
}

}  // namespace

Status ToStatus(const ApiError& error) {
  std::string message = error.message;
  switch (error.code) {
    case 404: return NotFoundError(std::move(message));
    case 409:
      return error.reason == "AlreadyExists" ? AlreadyExistsError(std::move(message))
                                             : AbortedError(std::move(message));
    case 410: return OutOfRangeError(std::move(message));
    case 400:
    case 415:
    case 422: return InvalidArgumentError(std::move(message));
    case 401: return UnauthenticatedError(std::move(message));
    case 403: return PermissionDeniedError(std::move(message));
    case 405: return UnimplementedError(std::move(message));
    default: return UnavailableError(std::move(message));
  }
}

FakeApiServer::FakeApiServer(FakeApiServerOptions options) : options_(std::move(options)) {
  StoreOptions store_options;
  store_options.event_window = options_.event_window;
  store_options.eviction_disruption_condition = options_.eviction_disruption_condition;
  if (options_.pod_termination_delay) {
    const auto delay = *options_.pod_termination_delay;
    store_options.on_graceful_pod_delete = [this, delay](const std::string& ns, const std::string& name,
                                                         const std::string& uid, int64_t) {
      scheduler_.RunAfter(delay, [this, ns, name, uid] {
        DeleteOptions now;
        now.grace_period_seconds = 0;
        now.precondition_uid = uid;  // only the pod whose deletion started, not a successor
        (void)store_->Delete(*kinds_.FindByStorageKey("/pods"), ns, name, now);
      });
    };
  }
  store_ = std::make_unique<Store>(kinds_, std::move(store_options));
  RouterOptions router_options;
  router_options.gone_as_http_status = options_.gone_as_http_status;
  router_options.counts = &counts_;
  router_options.on_webhook_call = [this](const WebhookCall& call) {
    std::lock_guard lock(webhook_calls_mu_);
    webhook_calls_.push_back(call);
  };
  router_ = std::make_unique<ApiRouter>(*store_, kinds_, faults_, tokens_, scheduler_, log_,
                                        router_options);
  tokens_.Require(options_.required_token);
  faults_.set_write_latency(options_.write_latency);
  for (const char* ns : {"default", "kube-system", "kube-public"}) {
    (void)store_->Create(*kinds_.FindByStorageKey("/namespaces"), "",
                         {{"metadata", {{"name", ns}}}});
  }
}

FakeApiServer::~FakeApiServer() {
  scheduler_.Stop();  // its callbacks use the store and router
  store_->DropAllWatches();
  std::lock_guard<std::mutex> lock(server_mu_);
  if (server_) server_->Shutdown(std::chrono::milliseconds(500));
  server_.reset();
}

Result<std::unique_ptr<FakeApiServer>> FakeApiServer::Start(FakeApiServerOptions options) {
  std::unique_ptr<FakeApiServer> server(new FakeApiServer(std::move(options)));
  PHX_RETURN_IF_ERROR(server->Listen(server->options_.port));
  server->ScheduleTicks();
  return server;
}

Status FakeApiServer::Listen(uint16_t port) {
  http::ServerOptions http_options;
  http_options.address = options_.address;
  http_options.port = port;
  http_options.tls = options_.tls;
  http_options.io_threads = options_.io_threads;
  http_options.max_body_bytes = 64u << 20;
  http_options.idle_timeout = std::chrono::seconds(600);
  http_options.logger = options_.logger;
  auto server = std::make_unique<http::HttpServer>(std::move(http_options));
  auto route = [this](http::Request&& request, http::ResponseWriter&& writer) {
    router_->Handle(std::move(request), std::move(writer));
  };
  server->HandlePrefix("*", "/api", route);  // /api/... and /apis/...
  server->Handle("GET", "/version", route);
  for (const char* probe : {"/healthz", "/readyz", "/livez"}) {
    server->Handle("GET", probe, [](const http::Request&) {
      http::Response r;
      r.content_type = "text/plain";
      r.body = "ok";
      return r;
    });
  }
  AddControlEndpoints(*server, *this, scheduler_);
  PHX_RETURN_IF_ERROR(server->Start());
  std::lock_guard<std::mutex> lock(server_mu_);
  port_ = server->port();
  server_ = std::move(server);
  return OkStatus();
}

void FakeApiServer::ScheduleTicks() {
  // Bookmarks, and forgetting watches whose client left, on a fixed period.
  scheduler_.RunAfter(options_.bookmark_interval, [this] {
    store_->SendBookmarks();
    store_->ReapGoneWatches();
    ScheduleTicks();
  });
}

std::string FakeApiServer::url() const {
  return fmt::format("{}://{}:{}", options_.tls ? "https" : "http", options_.address, port_);
}

std::string FakeApiServer::Kubeconfig(std::string_view token, std::string_view ca_file) const {
  std::string cluster = fmt::format("    server: {}\n", url());
  if (options_.tls) {
    cluster += ca_file.empty() ? "    insecure-skip-tls-verify: true\n"
                               : fmt::format("    certificate-authority: {}\n", ca_file);
  }
  return fmt::format(
      "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n{}users:\n- name: fake\n"
      "  user:\n    token: {}\ncontexts:\n- name: fake\n  context:\n    cluster: fake\n    user: fake\n"
      "    namespace: default\ncurrent-context: fake\n",
      cluster, token);
}

Status FakeApiServer::WriteKubeconfig(const std::string& path, std::string_view token,
                                      std::string_view ca_file) const {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << Kubeconfig(token, ca_file);
    if (!out.good()) return UnavailableError("cannot write kubeconfig " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return UnavailableError("cannot rename kubeconfig into " + path);
  }
  return OkStatus();
}

Result<KindInfo> FakeApiServer::Kind(std::string_view resource) const {
  auto kind = kinds_.FindByName(resource);
  if (!kind) return NotFoundError("unknown resource \"" + std::string(resource) + "\"");
  return *kind;
}

Result<json::Json> FakeApiServer::Create(std::string_view resource, json::Json object) {
  PHX_ASSIGN_OR_RETURN(KindInfo kind, Kind(resource));
  const std::string ns = kind.namespaced ? MetaField(object, "namespace") : "";
  return ObjectOrError(store_->Create(kind, ns, std::move(object)));
}

Result<json::Json> FakeApiServer::Seed(json::Json object) {
  if (!object.is_object() || !object.contains("apiVersion") || !object.contains("kind") ||
      !object["apiVersion"].is_string() || !object["kind"].is_string()) {
    return InvalidArgumentError("seed object needs apiVersion and kind");
  }
  auto kind = kinds_.FindByKind(object["apiVersion"].get<std::string>(), object["kind"].get<std::string>());
  if (!kind) {
    return NotFoundError("no resource for apiVersion " + object["apiVersion"].get<std::string>() +
                         " kind " + object["kind"].get<std::string>());
  }
  return ObjectOrError(store_->Seed(*kind, std::move(object)));
}

Result<json::Json> FakeApiServer::Get(std::string_view resource, std::string_view namespace_,
                                      std::string_view name) {
  PHX_ASSIGN_OR_RETURN(KindInfo kind, Kind(resource));
  return ObjectOrError(store_->Get(kind, std::string(namespace_), std::string(name)));
}

Result<std::vector<json::Json>> FakeApiServer::List(std::string_view resource,
                                                    std::string_view namespace_,
                                                    std::string_view label_selector,
                                                    std::string_view field_selector) {
  PHX_ASSIGN_OR_RETURN(KindInfo kind, Kind(resource));
  ListOptions options;
  options.namespace_ = std::string(namespace_);
  PHX_ASSIGN_OR_RETURN(options.labels, LabelSelector::Parse(label_selector));
  PHX_ASSIGN_OR_RETURN(options.fields, FieldSelector::Parse(field_selector));
  PHX_ASSIGN_OR_RETURN(ListResult list, Unwrap(store_->List(kind, options)));
  std::vector<json::Json> out;
  out.reserve(list.items.size());
  for (const auto& item : list.items) out.push_back(item->Parse());
  return out;
}

Result<json::Json> FakeApiServer::Update(std::string_view resource, json::Json object) {
  PHX_ASSIGN_OR_RETURN(KindInfo kind, Kind(resource));
  const std::string ns = MetaField(object, "namespace"), name = MetaField(object, "name");
  return ObjectOrError(store_->Update(kind, ns, name, std::move(object), Subresource::kNone));
}

Result<json::Json> FakeApiServer::UpdateStatus(std::string_view resource, json::Json object) {
  PHX_ASSIGN_OR_RETURN(KindInfo kind, Kind(resource));
  const std::string ns = MetaField(object, "namespace"), name = MetaField(object, "name");
  return ObjectOrError(store_->Update(kind, ns, name, std::move(object),
                                      kind.has_status ? Subresource::kStatus : Subresource::kNone));
}

Result<json::Json> FakeApiServer::Patch(std::string_view resource, std::string_view namespace_,
                                        std::string_view name, PatchType type,
                                        std::string_view patch, bool status,
                                        std::string_view field_manager) {
  PHX_ASSIGN_OR_RETURN(KindInfo kind, Kind(resource));
  return ObjectOrError(store_->Patch(kind, std::string(namespace_), std::string(name), type, patch,
                                     status ? Subresource::kStatus : Subresource::kNone,
                                     std::string(field_manager)));
}

Result<json::Json> FakeApiServer::Delete(std::string_view resource, std::string_view namespace_,
                                         std::string_view name, const DeleteOptions& options) {
  PHX_ASSIGN_OR_RETURN(KindInfo kind, Kind(resource));
  PHX_ASSIGN_OR_RETURN(DeleteResult r, Unwrap(store_->Delete(kind, std::string(namespace_),
                                                             std::string(name), options)));
  return r.object->Parse();
}

Result<json::Json> FakeApiServer::WaitFor(std::string_view resource, std::string_view namespace_,
                                          std::string_view name,
                                          const std::function<bool(const json::Json&)>& predicate,
                                          std::chrono::milliseconds deadline) {
  PHX_ASSIGN_OR_RETURN(KindInfo kind, Kind(resource));
  const auto end = std::chrono::steady_clock::now() + deadline;
  std::string last = "not found";
  for (;;) {
    const uint64_t seen = store_->resource_version();
    auto r = store_->Get(kind, std::string(namespace_), std::string(name));
    if (IsOk(r)) {
      json::Json object = std::get<ObjectPtr>(r)->Parse();
      if (!predicate || predicate(object)) return object;
      last = json::Dump(object);
    }
    if (std::chrono::steady_clock::now() >= end) {
      return DeadlineExceededError(fmt::format("{} {}/{}: condition not met, last state: {}",
                                               resource, namespace_, name, last));
    }
    store_->WaitForChange(seen, end);
  }
}

Status FakeApiServer::WaitForGone(std::string_view resource, std::string_view namespace_,
                                  std::string_view name, std::chrono::milliseconds deadline) {
  PHX_ASSIGN_OR_RETURN(KindInfo kind, Kind(resource));
  const auto end = std::chrono::steady_clock::now() + deadline;
  for (;;) {
    const uint64_t seen = store_->resource_version();
    if (!IsOk(store_->Get(kind, std::string(namespace_), std::string(name)))) return OkStatus();
    if (std::chrono::steady_clock::now() >= end) {
      return DeadlineExceededError(fmt::format("{} {}/{} still exists", resource, namespace_, name));
    }
    store_->WaitForChange(seen, end);
  }
}

Result<std::vector<json::Json>> FakeApiServer::WaitForCount(std::string_view resource,
                                                            std::string_view namespace_,
                                                            std::string_view label_selector,
                                                            size_t count,
                                                            std::chrono::milliseconds deadline) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  for (;;) {
    const uint64_t seen = store_->resource_version();
    PHX_ASSIGN_OR_RETURN(auto items, List(resource, namespace_, label_selector));
    if (items.size() == count) return items;
    if (std::chrono::steady_clock::now() >= end) {
      return DeadlineExceededError(fmt::format("{} in \"{}\" matching \"{}\": {} objects, want {}",
                                               resource, namespace_, label_selector, items.size(), count));
    }
    store_->WaitForChange(seen, end);
  }
}

size_t FakeApiServer::watch_count() {
  store_->ReapGoneWatches();
  return store_->watch_count();
}

bool FakeApiServer::WaitForWatches(size_t count, std::chrono::milliseconds deadline) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  while (watch_count() != count) {
    if (std::chrono::steady_clock::now() >= end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // polling interval, not a wait
  }
  return true;
}

void FakeApiServer::GoDown() {
  store_->DropAllWatches();
  std::unique_ptr<http::HttpServer> server;
  {
    std::lock_guard<std::mutex> lock(server_mu_);
    server = std::move(server_);
  }
  if (server) server->Shutdown(std::chrono::milliseconds(200));
}

Status FakeApiServer::ComeUp() {
  {
    std::lock_guard<std::mutex> lock(server_mu_);
    if (server_) return OkStatus();
  }
  return Listen(port_);
}

bool FakeApiServer::down() const {
  std::lock_guard<std::mutex> lock(server_mu_);
  return server_ == nullptr;
}

std::vector<WebhookCall> FakeApiServer::WebhookCalls() const {
  std::lock_guard lock(webhook_calls_mu_);
  return webhook_calls_;
}

}  // namespace phalanx::fakes::apiserver
