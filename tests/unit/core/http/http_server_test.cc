// HttpServer basics: routing, status codes, request fields, keep-alive, concurrency, Start().
#include "core/http/http_server.h"

#include <cpprest/http_client.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <set>
#include <thread>

#include "tests/unit/core/http/test_client.h"

namespace phalanx::http {
namespace {

using testing::GetRequest;
using testing::RawClient;
using web::http::methods;
using web::http::client::http_client;

std::string BaseUrl(const HttpServer& server) {
  return "http://127.0.0.1:" + std::to_string(server.port());
}

SyncHandler Text(std::string body) {
  return [body](const Request&) { return Response{200, "text/plain", {}, body}; };
}

TEST(HttpServerTest, ServesRouteOnEphemeralPort) {
  HttpServer server(ServerOptions{});
  server.Handle("GET", "/hello", Text("hi"));
  ASSERT_TRUE(server.Start().ok());
  EXPECT_NE(server.port(), 0);
  http_client client(BaseUrl(server));
  auto response = client.request(methods::GET, "/hello").get();
  EXPECT_EQ(response.status_code(), 200);
  EXPECT_EQ(response.headers().content_type(), "text/plain");
  EXPECT_EQ(response.extract_string().get(), "hi");
}

TEST(HttpServerTest, UnknownPathGets404Json) {
  HttpServer server(ServerOptions{});
  server.Handle("GET", "/hello", Text("hi"));
  ASSERT_TRUE(server.Start().ok());
  http_client client(BaseUrl(server));
  auto response = client.request(methods::GET, "/nope?x=1").get();
  EXPECT_EQ(response.status_code(), 404);
  EXPECT_EQ(response.headers().content_type(), "application/json");
  const auto json = nlohmann::json::parse(response.extract_string().get());
  EXPECT_EQ(json["code"], 404);
  EXPECT_EQ(json["reason"], "NotFound");
  EXPECT_EQ(json["message"], "no route for GET /nope");
}

TEST(HttpServerTest, WrongMethodGets405WithAllowHeader) {
  HttpServer server(ServerOptions{});
  server.Handle("GET", "/thing", Text("get"));
  server.Handle("PUT", "/thing", Text("put"));
  ASSERT_TRUE(server.Start().ok());
  http_client client(BaseUrl(server));
  auto response = client.request(methods::POST, "/thing", "{}", "application/json").get();
  EXPECT_EQ(response.status_code(), 405);
  EXPECT_EQ(response.headers()["Allow"], "GET, PUT");
  EXPECT_EQ(nlohmann::json::parse(response.extract_string().get())["reason"], "MethodNotAllowed");
}

TEST(HttpServerTest, PassesDecodedQueryHeadersBodyAndRemoteAddress) {
  HttpServer server(ServerOptions{});
  Request seen;
  server.Handle("POST", "/api/v1/pods", SyncHandler([&seen](const Request& request) {
                  seen = request;
                  return Response{201, "application/json", {{"X-Reply", "yes"}}, "{}"};
                }));
  ASSERT_TRUE(server.Start().ok());
  RawClient client;
  ASSERT_TRUE(client.Connect(server.port()).ok());
  ASSERT_TRUE(client
                  .Send("POST /api/v1/pods?watch=1&labelSelector=app%3Dweb%2Ctier+in+%28a%29&x "
                        "HTTP/1.1\r\nHost: test\r\nX-Custom: Value\r\nContent-Length: 7\r\n\r\n"
                        "{\"a\":1}")
                  .ok());
  auto response = client.ReadResponse();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->result_int(), 201);
  EXPECT_EQ((*response)["X-Reply"], "yes");
  EXPECT_EQ(seen.method, "POST");
  EXPECT_EQ(seen.target, "/api/v1/pods?watch=1&labelSelector=app%3Dweb%2Ctier+in+%28a%29&x");
  EXPECT_EQ(seen.path, "/api/v1/pods");
  ASSERT_EQ(seen.query.size(), 3u);
  EXPECT_EQ(seen.QueryValue("labelSelector").value_or("?"), "app=web,tier in (a)");
  EXPECT_EQ(seen.QueryValue("watch").value_or("?"), "1");
  EXPECT_EQ(seen.QueryValue("x").value_or("?"), "");
  EXPECT_EQ(seen.HeaderValue("x-custom"), "Value");
  EXPECT_EQ(seen.body, "{\"a\":1}");
  EXPECT_EQ(seen.remote_address, "127.0.0.1:" + std::to_string(client.local_port()));
}

TEST(HttpServerTest, ReusesKeepAliveConnection) {
  HttpServer server(ServerOptions{});
  std::mutex mu;
  std::vector<std::string> remotes;
  server.Handle("GET", "/who", SyncHandler([&](const Request& request) {
                  std::lock_guard<std::mutex> lock(mu);
                  remotes.push_back(request.remote_address);
                  return Response{200, "text/plain", {}, request.remote_address};
                }));
  ASSERT_TRUE(server.Start().ok());
  RawClient client;
  ASSERT_TRUE(client.Connect(server.port()).ok());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(client.Send(GetRequest("/who")).ok());
    auto response = client.ReadResponse();
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(response->result_int(), 200);
    EXPECT_TRUE(response->keep_alive());
  }
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(remotes.size(), 3u);
  EXPECT_EQ(remotes[0], remotes[1]);  // same client port: one connection served all three
  EXPECT_EQ(remotes[1], remotes[2]);
}

TEST(HttpServerTest, AnswersPipelinedRequestsInOrder) {
  HttpServer server(ServerOptions{});
  server.HandlePrefix("GET", "/echo/", [](Request&& request, ResponseWriter&& writer) {
    writer.Reply(Response{200, "text/plain", {}, request.path});
  });
  ASSERT_TRUE(server.Start().ok());
  RawClient client;
  ASSERT_TRUE(client.Connect(server.port()).ok());
  ASSERT_TRUE(client.Send(GetRequest("/echo/1") + GetRequest("/echo/2") + GetRequest("/echo/3")).ok());
  for (const char* want : {"/echo/1", "/echo/2", "/echo/3"}) {
    auto response = client.ReadResponse();
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(response->body(), want);
  }
}

// The extender's shape (a 67 KB request, a 215 KB reply) and larger: the read buffer grows past
// its first 4 KiB, a reply over 64 KiB goes out whole (head and body in one write), and a
// request pipelined behind a large one is still read from the same buffer.
TEST(HttpServerTest, LargeBodiesBothWaysOnOneKeepAliveConnection) {
  HttpServer server(ServerOptions{});
  server.Handle("POST", "/twice", SyncHandler([](const Request& request) {
                  return Response{200, "text/plain", {}, request.body + request.body};
                }));
  ASSERT_TRUE(server.Start().ok());
  RawClient client;
  ASSERT_TRUE(client.Connect(server.port()).ok());
  auto post = [](const std::string& body) {
    return "POST /twice HTTP/1.1\r\nHost: test\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  };
  std::string big;
  for (int i = 0; big.size() < 400'000; ++i) big += "\"node-" + std::to_string(i) + "\",";
  const std::string small = "tail";
  for (int round = 0; round < 3; ++round) {
    ASSERT_TRUE(client.Send(post(big) + post(small)).ok());
    auto response = client.ReadResponse();
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(response->result_int(), 200);
    ASSERT_EQ(response->body().size(), 2 * big.size());
    EXPECT_TRUE(response->body() == big + big) << "round " << round;
    auto second = client.ReadResponse();
    ASSERT_TRUE(second.ok()) << second.status();
    EXPECT_EQ(second->body(), "tailtail");
  }
}

// A body the handler keeps for several replies is sent as it is and stays intact.
TEST(HttpServerTest, SharedBodyIsSentToEveryRequestAndLeftIntact) {
  auto kept = std::make_shared<const std::string>(std::string(300'000, 'k') + "end");
  HttpServer server(ServerOptions{});
  server.Handle("*", "/kept", SyncHandler([kept](const Request&) {
                  Response r;
                  r.shared_body = kept;
                  return r;
                }));
  ASSERT_TRUE(server.Start().ok());
  RawClient client;
  ASSERT_TRUE(client.Connect(server.port()).ok());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(client.Send(GetRequest("/kept")).ok());
    auto response = client.ReadResponse();
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ((*response)["Content-Length"], std::to_string(kept->size()));
    EXPECT_TRUE(response->body() == *kept);
  }
  ASSERT_TRUE(client.Send("HEAD /kept HTTP/1.1\r\nHost: test\r\n\r\n").ok());
  auto head = client.ReadResponse(/*head=*/true);
  ASSERT_TRUE(head.ok()) << head.status();
  EXPECT_EQ((*head)["Content-Length"], std::to_string(kept->size()));
  EXPECT_TRUE(head->body().empty());
  EXPECT_EQ(kept->size(), 300'003u);
}

TEST(HttpServerTest, ServesConcurrentClients) {
  HttpServer server(ServerOptions{});
  std::atomic<int> calls{0};
  server.Handle("POST", "/sum", SyncHandler([&calls](const Request& request) {
                  ++calls;
                  const auto json = nlohmann::json::parse(request.body);
                  return Response{200, "application/json", {},
                                  std::to_string(json["a"].get<int>() + json["b"].get<int>())};
                }));
  ASSERT_TRUE(server.Start().ok());
  constexpr int kClients = 8;
  constexpr int kRequestsEach = 40;
  std::atomic<int> correct{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      RawClient client;
      if (!client.Connect(server.port()).ok()) return;
      for (int i = 0; i < kRequestsEach; ++i) {
        const std::string body = "{\"a\":" + std::to_string(c) + ",\"b\":" + std::to_string(i) + "}";
        const std::string request = "POST /sum HTTP/1.1\r\nHost: t\r\nContent-Length: " +
                                    std::to_string(body.size()) + "\r\n\r\n" + body;
        if (!client.Send(request).ok()) return;
        auto response = client.ReadResponse();
        if (response.ok() && response->body() == std::to_string(c + i)) ++correct;
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(correct.load(), kClients * kRequestsEach);
  EXPECT_EQ(calls.load(), kClients * kRequestsEach);
}

TEST(HttpServerTest, Http10ClientWithoutKeepAliveGetsResponseThenClose) {
  HttpServer server(ServerOptions{});
  server.Handle("GET", "/old", Text("legacy"));
  ASSERT_TRUE(server.Start().ok());
  RawClient client;
  ASSERT_TRUE(client.Connect(server.port()).ok());
  ASSERT_TRUE(client.Send("GET /old HTTP/1.0\r\n\r\n").ok());
  auto response = client.ReadResponse();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->body(), "legacy");
  EXPECT_EQ((*response)["Connection"], "close");
  EXPECT_TRUE(client.WaitForClose());
}

TEST(HttpServerTest, ConnectionCloseRequestIsHonoured) {
  HttpServer server(ServerOptions{});
  server.Handle("GET", "/x", Text("x"));
  ASSERT_TRUE(server.Start().ok());
  RawClient client;
  ASSERT_TRUE(client.Connect(server.port()).ok());
  ASSERT_TRUE(client.Send(GetRequest("/x", "Connection: close\r\n")).ok());
  auto response = client.ReadResponse();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_FALSE(response->keep_alive());
  EXPECT_TRUE(client.WaitForClose());
}

TEST(HttpServerTest, HeadRequestGetsHeadersWithoutBody) {
  HttpServer server(ServerOptions{});
  server.Handle("*", "/doc", Text("twelve bytes"));
  ASSERT_TRUE(server.Start().ok());
  RawClient client;
  ASSERT_TRUE(client.Connect(server.port()).ok());
  ASSERT_TRUE(client.Send("HEAD /doc HTTP/1.1\r\nHost: t\r\n\r\n").ok());
  auto head = client.ReadResponse(/*head=*/true);
  ASSERT_TRUE(head.ok()) << head.status();
  EXPECT_EQ((*head)["Content-Length"], "12");
  EXPECT_EQ(head->body(), "");
  // Had the body been sent, it would be parsed as the next response and fail.
  ASSERT_TRUE(client.Send(GetRequest("/doc")).ok());
  auto get = client.ReadResponse();
  ASSERT_TRUE(get.ok()) << get.status();
  EXPECT_EQ(get->body(), "twelve bytes");
}

TEST(HttpServerTest, RoutesAddedAfterStartAreServed) {
  HttpServer server(ServerOptions{});
  ASSERT_TRUE(server.Start().ok());
  server.Handle("GET", "/late", Text("late"));
  http_client client(BaseUrl(server));
  auto response = client.request(methods::GET, "/late").get();
  EXPECT_EQ(response.status_code(), 200);
  EXPECT_EQ(response.extract_string().get(), "late");
}

TEST(HttpServerTest, StartFailsWhenPortIsTaken) {
  HttpServer first(ServerOptions{});
  ASSERT_TRUE(first.Start().ok());
  ServerOptions options;
  options.port = first.port();
  HttpServer second(options);
  const Status status = second.Start();
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_NE(status.message().find("bind 127.0.0.1:" + std::to_string(first.port())), std::string::npos)
      << status;
  EXPECT_NE(status.message().find("in use"), std::string::npos) << status;
}

TEST(HttpServerTest, StartFailsForUnresolvableAddressAndSecondStart) {
  ServerOptions options;
  options.address = "no-such-host.invalid";
  HttpServer bad(options);
  const Status status = bad.Start();
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("listen address no-such-host.invalid"), std::string::npos) << status;

  HttpServer twice(ServerOptions{});
  ASSERT_TRUE(twice.Start().ok());
  EXPECT_EQ(twice.Start().code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace phalanx::http
