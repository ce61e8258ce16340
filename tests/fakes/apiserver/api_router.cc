#include "tests/fakes/apiserver/api_router.h"

#include <cstdlib>
#include <memory>
#include <utility>

#include <fmt/format.h>

#include "tests/fakes/apiserver/discovery.h"
#include "tests/fakes/apiserver/request_path.h"

namespace phalanx::fakes::apiserver {
namespace {

constexpr size_t kMaxRecordedRequests = 100000;
constexpr size_t kMaxRecordedBody = 64 << 10;

// One watch stream over HTTP chunks. The stream starts lazily, at the first line or Open(), so a
// watch refused with HTTP 410 can still answer with a plain response.
class HttpWatchSink : public WatchSink {
 public:
  explicit HttpWatchSink(http::ResponseWriter writer) : writer_(std::move(writer)) {}

  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    StartLocked();
  }
  bool Send(std::string lines) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return false;
    StartLocked();
    return writer_.WriteChunk(std::move(lines));
  }
  void Close() override {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return;
    closed_ = true;
    StartLocked();
    writer_.EndStream();
  }
  bool Gone() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return closed_ || writer_.ClientGone();
  }
  // Before the stream started: answer with a plain response instead.
  void ReplyInstead(http::Response response) {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    writer_.Reply(std::move(response));
  }

 private:
  void StartLocked() {
    if (started_) return;
    started_ = true;
    writer_.StartStream(200, "application/json");
  }

  mutable std::mutex mu_;
  http::ResponseWriter writer_;
  bool started_ = false, closed_ = false;
};

bool Truthy(std::optional<std::string_view> v) { return v && (*v == "1" || *v == "true"); }

// create/update/patch/delete and the binding and eviction subresources: what a real server
// commits to etcd. A TokenReview is a POST but stores nothing.
bool IsWrite(const http::Request& request) {
  const std::string& m = request.method;
  if (m != "POST" && m != "PUT" && m != "PATCH" && m != "DELETE") return false;
  return !request.path.ends_with("/tokenreviews");
}

std::string VerbFor(const http::Request& request, const ResourcePath& path) {
  const std::string& m = request.method;
  if (m == "GET" || m == "HEAD") {
    if (!path.name.empty()) return "get";
    return Truthy(request.QueryValue("watch")) ? "watch" : "list";
  }
  if (m == "POST") return "create";
  if (m == "PUT") return "update";
  if (m == "PATCH") return "patch";
  if (m == "DELETE") return path.name.empty() ? "deletecollection" : "delete";
  return "";
}

std::string ListBody(const KindInfo& kind, const ListResult& list) {
  std::string body = fmt::format(R"({{"kind":"{}","apiVersion":"{}","metadata":{{"resourceVersion":"{}")",
                                 kind.list_kind(), kind.api_version(), list.resource_version);
  if (!list.continue_token.empty()) {
    body += fmt::format(R"(,"continue":"{}")", list.continue_token);
  }
  body += R"(},"items":[)";
  size_t bytes = body.size();
  for (const auto& item : list.items) bytes += item->json.size() + 1;
  body.reserve(bytes + 2);
  for (size_t i = 0; i < list.items.size(); ++i) {
    if (i > 0) body.push_back(',');
    body += list.items[i]->json;
  }
  body += "]}";
  return body;
}

// Parses a query integer; nullopt when absent, error text when malformed.
std::optional<int64_t> QueryInt(const http::Request& request, std::string_view name, bool* bad) {
  auto v = request.QueryValue(name);
  if (!v || v->empty()) return std::nullopt;
  char* end = nullptr;
  const std::string s(*v);
  const long long value = std::strtoll(s.c_str(), &end, 10);
  if (*end != '\0') *bad = true;
  return value;
}

ApiResult<json::Json> ParseBody(const http::Request& request) {
  if (request.body.empty()) return json::Json::object();
  auto parsed = json::Parse(request.body);
  if (!parsed.ok()) {
    return BadRequest("the body of the request could not be decoded: " + parsed.status().message());
  }
  return std::move(parsed).value();
}

json::Json ScaleOf(const KindInfo& kind, const json::Json& object) {
  const json::Json& meta = object["metadata"];
  json::Json scale = {{"kind", "Scale"}, {"apiVersion", "autoscaling/v1"}};
  scale["metadata"] = json::Json::object();
  for (const char* f : {"name", "namespace", "uid", "resourceVersion", "creationTimestamp"}) {
    if (meta.contains(f)) scale["metadata"][f] = meta[f];
  }
  (void)kind;
  const json::Json empty = json::Json::object();
  const json::Json& spec = object.contains("spec") ? object["spec"] : empty;
  const json::Json& status = object.contains("status") ? object["status"] : empty;
  scale["spec"] = {{"replicas", spec.is_object() ? spec.value("replicas", 0) : 0}};
  scale["status"] = {{"replicas", status.is_object() ? status.value("replicas", 0) : 0}};
  if (status.is_object() && status.contains("selector")) scale["status"]["selector"] = status["selector"];
  return scale;
}

}  // namespace

void RequestLog::Add(RecordedRequest request) {
  std::lock_guard<std::mutex> lock(mu_);
  if (request.body.size() > kMaxRecordedBody) request.body.resize(kMaxRecordedBody);
  requests_.push_back(std::move(request));
  if (requests_.size() > kMaxRecordedRequests) requests_.pop_front();
}

std::vector<RecordedRequest> RequestLog::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {requests_.begin(), requests_.end()};
}

void RequestLog::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  requests_.clear();
}

ApiRouter::ApiRouter(Store& store, KindRegistry& kinds, FaultInjector& faults,
                     TokenRegistry& tokens, Scheduler& scheduler, RequestLog& log,
                     RouterOptions options)
    : store_(store),
      kinds_(kinds),
      faults_(faults),
      tokens_(tokens),
      scheduler_(scheduler),
      log_(log),
      options_(options),
      admission_(store, kinds) {}

void ApiRouter::Handle(http::Request&& request, http::ResponseWriter&& writer) {
  // Each delayed request waits on its own timer, so parallel requests wait concurrently.
  const auto latency = faults_.latency() + (IsWrite(request) ? faults_.write_latency()
                                                             : std::chrono::milliseconds(0));
  if (latency.count() > 0) {
    auto held = std::make_shared<std::pair<http::Request, http::ResponseWriter>>(std::move(request),
                                                                                 std::move(writer));
    scheduler_.RunAfter(latency, [this, held] { Serve(held->first, held->second); });
    return;
  }
  Serve(request, writer);
}

void ApiRouter::Reply(http::Request& request, http::ResponseWriter& writer, std::string_view verb,
                      int code, std::string body) {
  log_.Add({std::string(verb), request.method, request.target,
            std::string(request.HeaderValue("Content-Type")), request.body, code});
  http::Response response;
  response.status = code;
  response.body = std::move(body);
  writer.Reply(std::move(response));
}

void ApiRouter::ReplyError(http::Request& request, http::ResponseWriter& writer,
                           std::string_view verb, const ApiError& error) {
  log_.Add({std::string(verb), request.method, request.target,
            std::string(request.HeaderValue("Content-Type")), request.body, error.code});
  http::Response response;
  response.status = error.code;
  response.body = error.ToStatusJson();
  if (error.retry_after_seconds > 0) {
    response.headers.push_back({"Retry-After", std::to_string(error.retry_after_seconds)});
  }
  writer.Reply(std::move(response));
}

void ApiRouter::Count(const http::Request& request, std::string_view verb, std::string_view resource) {
  if (options_.counts != nullptr) options_.counts->Add(request.HeaderValue("User-Agent"), verb, resource);
}

void ApiRouter::ServeFault(http::Request& request, http::ResponseWriter& writer, const std::string& verb,
                           const Fault& fault) {
  using Held = std::pair<http::Request, http::ResponseWriter>;
  auto hold = [&] { return std::make_shared<Held>(std::move(request), std::move(writer)); };
  switch (fault.kind) {
    case FaultKind::kStatus:
      return ReplyError(request, writer, verb, fault.error);
    case FaultKind::kSlow: {
      auto held = hold();
      scheduler_.RunAfter(fault.delay, [this, held] { Serve(held->first, held->second, /*replay=*/true); });
      return;
    }
    case FaultKind::kTimeout:
    case FaultKind::kReset: {
      if (fault.after_apply) {
        // The write is committed (its answer goes nowhere); only then does the client lose it.
        http::ResponseWriter nowhere;
        Serve(request, nowhere, /*replay=*/true);
      }
      if (fault.kind == FaultKind::kReset) {
        log_.Add({verb, request.method, request.target, std::string(request.HeaderValue("Content-Type")),
                  request.body, 0});
        writer.Abort();
        return;
      }
      auto held = hold();
      const std::string v = verb;
      scheduler_.RunAfter(fault.delay, [this, held, v, error = fault.error] {
        ReplyError(held->first, held->second, v, error);
      });
      return;
    }
    case FaultKind::kWatchGone:
      if (options_.gone_as_http_status) return ReplyError(request, writer, verb, fault.error);
      log_.Add({verb, request.method, request.target, "", "", 200});
      writer.StartStream(200, "application/json");
      writer.WriteChunk("{\"type\":\"ERROR\",\"object\":" + fault.error.ToStatusJson() + "}\n");
      writer.EndStream();
      return;
    case FaultKind::kWatchClose:
      log_.Add({verb, request.method, request.target, "", "", 200});
      writer.StartStream(200, "application/json");
      writer.EndStream();
      return;
    case FaultKind::kWatchStall: {
      // Open, then silent: no events, no bookmarks, until the stall ends (or the client leaves).
      log_.Add({verb, request.method, request.target, "", "", 200});
      writer.StartStream(200, "application/json");
      auto held = hold();
      const auto stall = fault.delay.count() > 0 ? fault.delay : std::chrono::milliseconds(3600000);
      scheduler_.RunAfter(stall, [held] { held->second.EndStream(); });
      return;
    }
  }
}

void ApiRouter::Serve(http::Request& request, http::ResponseWriter& writer, bool replay) {
  if (!tokens_.Authenticated(request.HeaderValue("Authorization"))) {
    Count(request, "", "");
    ReplyError(request, writer, "", Unauthorized());
    return;
  }
  if (auto body = ServeDiscovery(request.path, kinds_)) {
    Count(request, "get", "discovery");
    Reply(request, writer, "get", 200, std::move(*body));
    return;
  }
  auto parsed_path = ParseResourcePath(request.path, kinds_);
  if (!parsed_path) {
    Count(request, "", "");
    ApiError e = FromCode(404, "the server could not find the requested resource", 0);
    ReplyError(request, writer, "", e);
    return;
  }
  const ResourcePath& path = *parsed_path;
  const KindInfo& kind = path.kind;
  const std::string verb = VerbFor(request, path);
  if (!replay) {
    const std::string resource =
        path.subresource.empty() ? kind.resource_name() : kind.resource_name() + "/" + path.subresource;
    Count(request, verb, resource);
    auto fault = faults_.Match(FaultRequest{.verb = verb,
                                            .resource = resource,
                                            .namespace_ = path.namespace_,
                                            .client = request.HeaderValue("User-Agent"),
                                            .path = request.path,
                                            .write = IsWrite(request)});
    if (fault) return ServeFault(request, writer, verb, *fault);
  }
  auto reply_object = [&](int code, const ApiResult<ObjectPtr>& r) {
    if (!IsOk(r)) return ReplyError(request, writer, verb, std::get<ApiError>(r));
    Reply(request, writer, verb, code, std::get<ObjectPtr>(r)->json);
  };
  auto bad = [&](const ApiError& e) { ReplyError(request, writer, verb, e); };
  const std::string& m = request.method;

  // TokenReview: answered, never stored.
  if (kind.group == "authentication.k8s.io" && kind.plural == "tokenreviews") {
    if (m != "POST" || !path.name.empty()) return bad(MethodNotAllowed("only create is supported"));
    auto body = ParseBody(request);
    if (!IsOk(body)) return bad(std::get<ApiError>(body));
    return Reply(request, writer, verb, 201, json::Dump(tokens_.Review(std::get<json::Json>(body))));
  }

  if (!path.subresource.empty()) {
    const std::string& sub = path.subresource;
    if (sub == "status" && kind.has_status) {
      if (m == "GET") return reply_object(200, store_.Get(kind, path.namespace_, path.name));
      if (m == "PUT") {
        auto body = ParseBody(request);
        if (!IsOk(body)) return bad(std::get<ApiError>(body));
        return reply_object(200, store_.Update(kind, path.namespace_, path.name,
                                               std::move(std::get<json::Json>(body)),
                                               Subresource::kStatus));
      }
      if (m == "PATCH") {
        auto type = PatchTypeFromContentType(request.HeaderValue("Content-Type"));
        if (!type.ok()) return bad(Unsupported(type.status().message()));
        return reply_object(200, store_.Patch(kind, path.namespace_, path.name, *type, request.body,
                                              Subresource::kStatus));
      }
      return bad(MethodNotAllowed("status supports get, update and patch"));
    }
    if (sub == "binding" && kind.group.empty() && kind.plural == "pods" && m == "POST") {
      auto body = ParseBody(request);
      if (!IsOk(body)) return bad(std::get<ApiError>(body));
      auto r = store_.Bind(path.namespace_, path.name, std::get<json::Json>(body));
      if (!IsOk(r)) return bad(std::get<ApiError>(r));
      return Reply(request, writer, verb, 201,
                   json::Dump(SuccessStatus("", "pods", path.name, std::get<ObjectPtr>(r)->uid, 201)));
    }
    if (sub == "eviction" && kind.group.empty() && kind.plural == "pods" && m == "POST") {
      auto body = ParseBody(request);
      if (!IsOk(body)) return bad(std::get<ApiError>(body));
      auto r = store_.Evict(path.namespace_, path.name, std::get<json::Json>(body));
      if (!IsOk(r)) return bad(std::get<ApiError>(r));
      return Reply(request, writer, verb, 201,
                   json::Dump(SuccessStatus("", "pods", path.name, std::get<ObjectPtr>(r)->uid, 201)));
    }
    if (sub == "scale" && kind.has_scale && (m == "GET" || m == "PUT" || m == "PATCH")) {
      auto current = store_.Get(kind, path.namespace_, path.name);
      if (!IsOk(current)) return bad(std::get<ApiError>(current));
      json::Json scale = ScaleOf(kind, std::get<ObjectPtr>(current)->Parse());
      if (m == "GET") return Reply(request, writer, verb, 200, json::Dump(scale));
      json::Json wanted;
      if (m == "PUT") {
        auto body = ParseBody(request);
        if (!IsOk(body)) return bad(std::get<ApiError>(body));
        wanted = std::move(std::get<json::Json>(body));
      } else {
        auto type = PatchTypeFromContentType(request.HeaderValue("Content-Type"));
        if (!type.ok()) return bad(Unsupported(type.status().message()));
        auto patched = ApplyPatch(scale, *type, request.body);
        if (!patched.ok()) return bad(BadRequest(patched.status().message()));
        wanted = std::move(patched).value();
      }
      if (!wanted.contains("spec") || !wanted["spec"].contains("replicas") ||
          !wanted["spec"]["replicas"].is_number_integer()) {
        return bad(Invalid("autoscaling", "Scale", path.name, "spec.replicas: Required value"));
      }
      json::Json patch = {{"spec", {{"replicas", wanted["spec"]["replicas"]}}}};
      if (wanted.contains("metadata") && wanted["metadata"].contains("resourceVersion")) {
        patch["metadata"] = {{"resourceVersion", wanted["metadata"]["resourceVersion"]}};
      }
      auto r = store_.Patch(kind, path.namespace_, path.name, PatchType::kMerge, json::Dump(patch),
                            Subresource::kNone);
      if (!IsOk(r)) return bad(std::get<ApiError>(r));
      return Reply(request, writer, verb, 200,
                   json::Dump(ScaleOf(kind, std::get<ObjectPtr>(r)->Parse())));
    }
    return bad(FromCode(404, "the server could not find the requested resource", 0));
  }

  if (m == "GET" || m == "HEAD") {
    if (!path.name.empty()) return reply_object(200, store_.Get(kind, path.namespace_, path.name));
    if (verb == "watch") return ServeWatch(request, path, writer);
    ListOptions options;
    options.namespace_ = path.namespace_;
    auto labels = LabelSelector::Parse(request.QueryValue("labelSelector").value_or(""));
    if (!labels.ok()) return bad(BadRequest(labels.status().message()));
    auto fields = FieldSelector::Parse(request.QueryValue("fieldSelector").value_or(""));
    if (!fields.ok()) return bad(BadRequest(fields.status().message()));
    options.labels = std::move(labels).value();
    options.fields = std::move(fields).value();
    bool malformed = false;
    options.limit = static_cast<size_t>(std::max<int64_t>(0, QueryInt(request, "limit", &malformed).value_or(0)));
    if (malformed) return bad(BadRequest("limit: invalid value"));
    options.continue_token = std::string(request.QueryValue("continue").value_or(""));
    auto r = store_.List(kind, options);
    if (!IsOk(r)) return bad(std::get<ApiError>(r));
    return Reply(request, writer, verb, 200, ListBody(kind, std::get<ListResult>(r)));
  }
  if (m == "POST") {
    if (!path.name.empty()) return bad(MethodNotAllowed("POST is only allowed on a collection"));
    auto body = ParseBody(request);
    if (!IsOk(body)) return bad(std::get<ApiError>(body));
    if (kind.group.empty() && kind.plural == "pods") {
      // Mutating admission runs before the object is stored, as kube-apiserver's chain does.
      if (auto refused = admission_.AdmitPodCreate(path.namespace_, std::get<json::Json>(body),
                                                   options_.on_webhook_call)) {
        return bad(*refused);
      }
    }
    return reply_object(201, store_.Create(kind, path.namespace_, std::move(std::get<json::Json>(body))));
  }
  if (m == "PUT") {
    if (path.name.empty()) return bad(MethodNotAllowed("PUT needs an object name"));
    auto body = ParseBody(request);
    if (!IsOk(body)) return bad(std::get<ApiError>(body));
    return reply_object(200, store_.Update(kind, path.namespace_, path.name,
                                           std::move(std::get<json::Json>(body)), Subresource::kNone));
  }
  if (m == "PATCH") {
    if (path.name.empty()) return bad(MethodNotAllowed("PATCH needs an object name"));
    auto type = PatchTypeFromContentType(request.HeaderValue("Content-Type"));
    if (!type.ok()) return bad(Unsupported(type.status().message()));
    if (*type == PatchType::kApply && request.QueryValue("fieldManager").value_or("").empty()) {
      return bad(BadRequest("PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: "
                            "is required for apply patch"));
    }
    const bool existed = IsOk(store_.Get(kind, path.namespace_, path.name));
    return reply_object(*type == PatchType::kApply && !existed ? 201 : 200,
                        store_.Patch(kind, path.namespace_, path.name, *type, request.body,
                                     Subresource::kNone, std::string(request.QueryValue("fieldManager").value_or(""))));
  }
  if (m == "DELETE") {
    DeleteOptions options;
    auto body = ParseBody(request);
    if (!IsOk(body)) return bad(std::get<ApiError>(body));
    const json::Json& d = std::get<json::Json>(body);
    if (d.is_object()) {
      if (d.contains("gracePeriodSeconds") && d["gracePeriodSeconds"].is_number_integer()) {
        options.grace_period_seconds = d["gracePeriodSeconds"].get<int64_t>();
      }
      if (d.contains("propagationPolicy") && d["propagationPolicy"].is_string()) {
        options.propagation_policy = d["propagationPolicy"].get<std::string>();
      }
      if (d.contains("orphanDependents") && d["orphanDependents"].is_boolean()) {
        options.propagation_policy = d["orphanDependents"].get<bool>() ? "Orphan" : "Background";
      }
      if (d.contains("preconditions") && d["preconditions"].is_object()) {
        const json::Json& p = d["preconditions"];
        if (p.contains("uid") && p["uid"].is_string()) options.precondition_uid = p["uid"].get<std::string>();
        if (p.contains("resourceVersion") && p["resourceVersion"].is_string()) {
          options.precondition_resource_version = p["resourceVersion"].get<std::string>();
        }
      }
    }
    bool malformed = false;
    if (auto g = QueryInt(request, "gracePeriodSeconds", &malformed)) options.grace_period_seconds = g;
    if (malformed) return bad(BadRequest("gracePeriodSeconds: invalid value"));
    if (auto p = request.QueryValue("propagationPolicy")) options.propagation_policy = std::string(*p);
    if (!options.propagation_policy.empty() && options.propagation_policy != "Background" &&
        options.propagation_policy != "Foreground" && options.propagation_policy != "Orphan") {
      return bad(BadRequest("propagationPolicy: Unsupported value: \"" + options.propagation_policy +
                            "\": supported values: \"Foreground\", \"Background\", \"Orphan\""));
    }
    if (path.name.empty()) {  // deletecollection
      ListOptions list;
      list.namespace_ = path.namespace_;
      auto labels = LabelSelector::Parse(request.QueryValue("labelSelector").value_or(""));
      if (!labels.ok()) return bad(BadRequest(labels.status().message()));
      auto fields = FieldSelector::Parse(request.QueryValue("fieldSelector").value_or(""));
      if (!fields.ok()) return bad(BadRequest(fields.status().message()));
      list.labels = std::move(labels).value();
      list.fields = std::move(fields).value();
      auto listed = store_.List(kind, list);
      if (!IsOk(listed)) return bad(std::get<ApiError>(listed));
      ListResult deleted;
      for (const auto& item : std::get<ListResult>(listed).items) {
        auto r = store_.Delete(kind, item->namespace_, item->name, options);
        if (IsOk(r)) deleted.items.push_back(std::get<DeleteResult>(r).object);
      }
      deleted.resource_version = store_.resource_version();
      return Reply(request, writer, verb, 200, ListBody(kind, deleted));
    }
    auto r = store_.Delete(kind, path.namespace_, path.name, options);
    if (!IsOk(r)) return bad(std::get<ApiError>(r));
    const DeleteResult& result = std::get<DeleteResult>(r);
    if (result.gone && !(kind.group.empty() && kind.plural == "pods")) {
      return Reply(request, writer, verb, 200,
                   json::Dump(SuccessStatus(kind.group, kind.plural, path.name, result.object->uid, 200)));
    }
    return Reply(request, writer, verb, 200, result.object->json);
  }
  bad(MethodNotAllowed(fmt::format("method {} is not supported", m)));
}

void ApiRouter::ServeWatch(http::Request& request, const ResourcePath& path,
                           http::ResponseWriter& writer) {
  auto bad = [&](const ApiError& e) { ReplyError(request, writer, "watch", e); };
  WatchOptions options;
  options.namespace_ = path.namespace_;
  auto labels = LabelSelector::Parse(request.QueryValue("labelSelector").value_or(""));
  if (!labels.ok()) return bad(BadRequest(labels.status().message()));
  auto fields = FieldSelector::Parse(request.QueryValue("fieldSelector").value_or(""));
  if (!fields.ok()) return bad(BadRequest(fields.status().message()));
  options.labels = std::move(labels).value();
  options.fields = std::move(fields).value();
  options.bookmarks = Truthy(request.QueryValue("allowWatchBookmarks"));
  const std::string rv(request.QueryValue("resourceVersion").value_or(""));
  if (!rv.empty() && rv != "0") {
    char* end = nullptr;
    const uint64_t value = std::strtoull(rv.c_str(), &end, 10);
    if (*end != '\0') return bad(BadRequest("resourceVersion: invalid value \"" + rv + "\""));
    options.resource_version = value;
  }
  bool malformed = false;
  const auto timeout = QueryInt(request, "timeoutSeconds", &malformed);
  if (malformed) return bad(BadRequest("timeoutSeconds: invalid value"));

  log_.Add({"watch", request.method, request.target, "", "", 200});
  auto sink = std::make_shared<HttpWatchSink>(std::move(writer));
  auto id = store_.Watch(path.kind, std::move(options), sink);
  if (!IsOk(id)) {
    const ApiError& error = std::get<ApiError>(id);
    if (options_.gone_as_http_status) {
      http::Response response;
      response.status = error.code;
      response.body = error.ToStatusJson();
      sink->ReplyInstead(std::move(response));
    } else {
      // As the real server: a 200 stream carrying one ERROR event with the Status, then the end.
      sink->Send("{\"type\":\"ERROR\",\"object\":" + error.ToStatusJson() + "}\n");
      sink->Close();
    }
    return;
  }
  sink->Open();
  const uint64_t watch_id = std::get<uint64_t>(id);
  if (watch_id != 0 && timeout && *timeout > 0) {
    scheduler_.RunAfter(std::chrono::seconds(*timeout), [this, watch_id] { store_.StopWatch(watch_id); });
  }
}

}  // namespace phalanx::fakes::apiserver
