#include "tests/fakes/apiserver/control_endpoints.h"

#include <cstdlib>

#include "core/json/json.h"
#include "tests/fakes/apiserver/fake_apiserver.h"
#include "tests/fakes/apiserver/seed.h"

namespace phalanx::fakes::apiserver {
namespace {

http::Response JsonResponse(int status, const json::Json& body) {
  http::Response r;
  r.status = status;
  r.body = json::Dump(body);
  return r;
}

http::Response Error(int status, const std::string& message) {
  return JsonResponse(status, {{"error", message}});
}

int64_t QueryInt(const http::Request& request, std::string_view name, int64_t fallback) {
  auto v = request.QueryValue(name);
  if (!v) return fallback;
  return std::strtoll(std::string(*v).c_str(), nullptr, 10);
}

}  // namespace

void AddControlEndpoints(http::HttpServer& server, FakeApiServer& fake, Scheduler& scheduler) {
  server.Handle("POST", "/fake/faults", [&fake](const http::Request& request) {
    auto body = json::Parse(request.body);
    if (!body.ok() || !body->is_object()) return Error(400, "body must be a JSON object");
    auto rule = FaultRuleFromJson(*body);
    if (!rule.ok()) return Error(400, rule.status().message());
    fake.FailNext(std::move(rule).value());
    return JsonResponse(200, {{"ok", true}});
  });
  server.Handle("GET", "/fake/faults", [&fake](const http::Request&) {
    return JsonResponse(200, fake.faults().ToJson());
  });
  server.Handle("DELETE", "/fake/faults", [&fake](const http::Request&) {
    fake.ClearFaults();
    return JsonResponse(200, {{"ok", true}});
  });
  server.Handle("POST", "/fake/latency", [&fake](const http::Request& request) {
    fake.SetLatency(std::chrono::milliseconds(QueryInt(request, "ms", 0)));
    return JsonResponse(200, {{"ok", true}});
  });
  server.Handle("POST", "/fake/write-latency", [&fake](const http::Request& request) {
    // Strict: a typo must not silently turn the latency off.
    const std::string ms(request.QueryValue("ms").value_or(""));
    char* end = nullptr;
    const long long value = std::strtoll(ms.c_str(), &end, 10);
    if (ms.empty() || *end != '\0' || value < 0 || value > 3600000) {
      return Error(400, "ms must be an integer from 0 to 3600000, got \"" + ms + "\"");
    }
    fake.SetWriteLatency(std::chrono::milliseconds(value));
    return JsonResponse(200, {{"ok", true}});
  });
  server.Handle("POST", "/fake/drop-watches", [&fake](const http::Request&) {
    fake.DropWatches();
    return JsonResponse(200, {{"ok", true}});
  });
  server.Handle("POST", "/fake/compact", [&fake](const http::Request&) {
    fake.CompactHistory();
    return JsonResponse(200, {{"ok", true}});
  });
  server.Handle("POST", "/fake/restart", [&fake, &scheduler](const http::Request& request) {
    const auto down_for = std::chrono::milliseconds(QueryInt(request, "downMs", 1000));
    // Not from this io thread: going down joins the io threads.
    scheduler.RunAfter(std::chrono::milliseconds(50), [&fake, &scheduler, down_for] {
      fake.GoDown();
      scheduler.RunAfter(down_for, [&fake] { (void)fake.ComeUp(); });
    });
    return JsonResponse(202, {{"ok", true}});
  });
  server.Handle("POST", "/fake/tokens", [&fake](const http::Request& request) {
    auto body = json::Parse(request.body);
    if (!body.ok() || !body->is_object() || !body->contains("token")) {
      return Error(400, "body must be {\"token\":...,\"username\":...}");
    }
    TokenUser user;
    user.username = body->value("username", std::string());
    user.uid = body->value("uid", std::string());
    if (body->contains("groups") && (*body)["groups"].is_array()) {
      for (const auto& g : (*body)["groups"]) {
        if (g.is_string()) user.groups.push_back(g.get<std::string>());
      }
    }
    // "extra": {"authentication.kubernetes.io/pod-name": ["p"], ...}, as for a bound pod token.
    if (body->contains("extra") && (*body)["extra"].is_object()) {
      for (const auto& [key, values] : (*body)["extra"].items()) {
        if (!values.is_array()) continue;
        for (const auto& v : values) {
          if (v.is_string()) user.extra[key].push_back(v.get<std::string>());
        }
      }
    }
    fake.AddToken((*body)["token"].get<std::string>(), std::move(user));
    return JsonResponse(200, {{"ok", true}});
  });
  server.Handle("POST", "/fake/seed", [&fake](const http::Request& request) {
    auto objects = ParseSeedDocument(request.body);
    if (!objects.ok()) return Error(400, objects.status().message());
    for (auto& object : *objects) {
      auto seeded = fake.Seed(std::move(object));
      if (!seeded.ok()) return Error(400, seeded.status().message());
    }
    return JsonResponse(200, {{"ok", true}, {"count", objects->size()}});
  });
  server.Handle("GET", "/fake/requests", [&fake](const http::Request&) {
    json::Json out = json::Json::array();
    for (const auto& r : fake.Requests()) {
      out.push_back({{"verb", r.verb}, {"method", r.method}, {"target", r.target},
                     {"contentType", r.content_type}, {"body", r.body}, {"code", r.code}});
    }
    return JsonResponse(200, out);
  });
  server.Handle("GET", "/fake/request-counts", [&fake](const http::Request&) {
    return JsonResponse(200, fake.request_counts().ToJson());
  });
  server.Handle("DELETE", "/fake/request-counts", [&fake](const http::Request&) {
    fake.ClearRequestCounts();
    return JsonResponse(200, {{"ok", true}});
  });
  server.Handle("GET", "/fake/state", [&fake](const http::Request&) {
    return JsonResponse(200, {{"resourceVersion", fake.resource_version()},
                              {"watches", fake.watch_count()}});
  });
}

}  // namespace phalanx::fakes::apiserver
