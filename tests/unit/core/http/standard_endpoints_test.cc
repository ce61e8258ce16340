#include <cpprest/http_client.h>
#include <gtest/gtest.h>

#include <atomic>

#include "core/http/http_server.h"

namespace phalanx::http {
namespace {

using web::http::methods;
using web::http::client::http_client;

std::string BaseUrl(const HttpServer& server) {
  return "http://127.0.0.1:" + std::to_string(server.port());
}

TEST(StandardEndpointsTest, HealthzAnswersOkAndReadyzDefaultsToReady) {
  HttpServer server(ServerOptions{});
  AddStandardEndpoints(server, StandardEndpoints{});
  ASSERT_TRUE(server.Start().ok());
  http_client client(BaseUrl(server));
  auto health = client.request(methods::GET, "/healthz").get();
  EXPECT_EQ(health.status_code(), 200);
  EXPECT_EQ(health.extract_string().get(), "ok");
  auto ready = client.request(methods::GET, "/readyz").get();
  EXPECT_EQ(ready.status_code(), 200);
  EXPECT_EQ(ready.extract_string().get(), "ok");
  // No metrics callback: no route.
  EXPECT_EQ(client.request(methods::GET, "/metrics").get().status_code(), 404);
}

TEST(StandardEndpointsTest, ReadyzFollowsReadinessWithReason) {
  HttpServer server(ServerOptions{});
  std::atomic<bool> synced{false};
  StandardEndpoints endpoints;
  endpoints.ready = [&synced](std::string* reason) {
    if (!synced.load()) *reason = "informers not synced: pods";
    return synced.load();
  };
  AddStandardEndpoints(server, std::move(endpoints));
  ASSERT_TRUE(server.Start().ok());
  http_client client(BaseUrl(server));
  auto not_ready = client.request(methods::GET, "/readyz").get();
  EXPECT_EQ(not_ready.status_code(), 503);
  EXPECT_EQ(not_ready.extract_string().get(), "informers not synced: pods");
  EXPECT_EQ(client.request(methods::GET, "/healthz").get().status_code(), 200);  // alive anyway
  synced = true;
  auto ready = client.request(methods::GET, "/readyz").get();
  EXPECT_EQ(ready.status_code(), 200);
  EXPECT_EQ(ready.extract_string().get(), "ok");
}

// A ready daemon's notes (what it runs without) are in the 200 body too.
TEST(StandardEndpointsTest, ReadyzShowsTheNotesOfAReadyDaemon) {
  HttpServer server(ServerOptions{});
  StandardEndpoints endpoints;
  endpoints.ready = [](std::string* reason) {
    *reason = "TrainingJob CRD not installed: gangs from pod labels only";
    return true;
  };
  AddStandardEndpoints(server, std::move(endpoints));
  ASSERT_TRUE(server.Start().ok());
  http_client client(BaseUrl(server));
  auto ready = client.request(methods::GET, "/readyz").get();
  EXPECT_EQ(ready.status_code(), 200);
  EXPECT_EQ(ready.extract_string().get(), "ok: TrainingJob CRD not installed: gangs from pod labels only");
}

TEST(StandardEndpointsTest, MetricsServedInPrometheusTextFormat) {
  HttpServer server(ServerOptions{});
  StandardEndpoints endpoints;
  endpoints.metrics = [] { return std::string("# TYPE up gauge\nup 1\n"); };
  AddStandardEndpoints(server, std::move(endpoints));
  ASSERT_TRUE(server.Start().ok());
  http_client client(BaseUrl(server));
  auto response = client.request(methods::GET, "/metrics").get();
  EXPECT_EQ(response.status_code(), 200);
  EXPECT_EQ(response.headers().content_type(), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(response.extract_string().get(), "# TYPE up gauge\nup 1\n");
  EXPECT_EQ(client.request(methods::POST, "/metrics").get().status_code(), 405);
}

}  // namespace
}  // namespace phalanx::http
