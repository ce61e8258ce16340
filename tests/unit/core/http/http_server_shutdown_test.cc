// HttpServer::Shutdown: grace period for pending replies, streams ended, idle connections
// closed at once, writers outliving the server.
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "core/http/http_server.h"
#include "tests/unit/core/http/test_client.h"

namespace phalanx::http {
namespace {

using testing::GetRequest;
using testing::HeldWriters;
using testing::RawClient;
using testing::WaitUntil;
using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(ShutdownTest, PendingReplyWithinGraceIsDeliveredWithConnectionClose) {
  auto server = std::make_unique<HttpServer>(ServerOptions{});
  HeldWriters held;
  server->Handle("POST", "/bind", held.Hold());
  ASSERT_TRUE(server->Start().ok());
  RawClient client;
  ASSERT_TRUE(client.Connect(server->port()).ok());
  ASSERT_TRUE(client.Send("POST /bind HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n").ok());
  ASSERT_TRUE(WaitUntil([&] { return held.size() == 1; }));
  ResponseWriter writer = std::move(held.Take()[0]);

  auto shutdown = std::async(std::launch::async, [&] { server->Shutdown(seconds(30)); });
  // Shutdown waits for the held reply (it is within its 30 s grace).
  EXPECT_EQ(shutdown.wait_for(milliseconds(300)), std::future_status::timeout);
  writer.Reply(Response{200, "text/plain", {}, "bound"});
  auto response = client.ReadResponse();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->body(), "bound");
  EXPECT_EQ((*response)["Connection"], "close");
  EXPECT_TRUE(client.WaitForClose());
  // Returns as soon as the last connection is gone, long before the grace period ends.
  EXPECT_EQ(shutdown.wait_for(testing::kTestDeadline), std::future_status::ready);
}

TEST(ShutdownTest, HeldRequestIsClosedAfterGraceAndItsWriterOutlivesTheServer) {
  auto server = std::make_unique<HttpServer>(ServerOptions{});
  HeldWriters held;
  server->Handle("GET", "/hold", held.Hold());
  ASSERT_TRUE(server->Start().ok());
  RawClient client;
  ASSERT_TRUE(client.Connect(server->port()).ok());
  ASSERT_TRUE(client.Send(GetRequest("/hold")).ok());
  ASSERT_TRUE(WaitUntil([&] { return held.size() == 1; }));
  ResponseWriter writer = std::move(held.Take()[0]);

  const auto start = std::chrono::steady_clock::now();
  server->Shutdown(milliseconds(200));
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(190));
  EXPECT_TRUE(client.WaitForClose());  // closed without a response
  EXPECT_TRUE(writer.ClientGone());

  server.reset();  // the server is gone; the writer is still here
  writer.Reply(Response{200, "text/plain", {}, "too late"});  // no-op, no crash (ASan-clean)
  EXPECT_FALSE(writer.WriteChunk("x"));
}

TEST(ShutdownTest, WriterDestroyedAfterServerIsHarmless) {
  ResponseWriter survivor;
  {
    HttpServer server(ServerOptions{});
    HeldWriters held;
    server.Handle("GET", "/hold", held.Hold());
    ASSERT_TRUE(server.Start().ok());
    RawClient client;
    ASSERT_TRUE(client.Connect(server.port()).ok());
    ASSERT_TRUE(client.Send(GetRequest("/hold")).ok());
    ASSERT_TRUE(WaitUntil([&] { return held.size() == 1; }));
    survivor = std::move(held.Take()[0]);
    server.Shutdown(milliseconds(50));
  }
  EXPECT_TRUE(survivor.ClientGone());
  // ~ResponseWriter would answer 500; with the server gone it must do nothing.
}

TEST(ShutdownTest, StreamsAreEndedWithTheirTerminatingChunk) {
  HttpServer server(ServerOptions{});
  HeldWriters held;
  server.Handle("GET", "/watch", held.Hold());
  ASSERT_TRUE(server.Start().ok());
  RawClient client;
  ASSERT_TRUE(client.Connect(server.port()).ok());
  ASSERT_TRUE(client.Send(GetRequest("/watch")).ok());
  ASSERT_TRUE(WaitUntil([&] { return held.size() == 1; }));
  ResponseWriter writer = std::move(held.Take()[0]);
  writer.StartStream(200, "application/json");
  writer.WriteChunk("event\n");
  ASSERT_TRUE(client.ReadHeader().ok());
  ASSERT_TRUE(client.ReadBodyUntil("event").ok());

  auto shutdown = std::async(std::launch::async, [&] { server.Shutdown(seconds(30)); });
  ASSERT_TRUE(client.ReadStreamEnd().ok());  // a clean end: the watch client just re-watches
  EXPECT_TRUE(client.WaitForClose());
  // Streams don't hold shutdown up for the grace period.
  EXPECT_EQ(shutdown.wait_for(seconds(10)), std::future_status::ready);
  EXPECT_TRUE(writer.ClientGone());
  EXPECT_FALSE(writer.WriteChunk("late\n"));
}

TEST(ShutdownTest, IdleConnectionsDoNotHoldUpShutdown) {
  HttpServer server(ServerOptions{});
  server.Handle("GET", "/x", SyncHandler([](const Request&) { return Response{200, "", {}, "x"}; }));
  ASSERT_TRUE(server.Start().ok());
  std::vector<std::unique_ptr<RawClient>> clients;
  for (int i = 0; i < 5; ++i) {
    auto client = std::make_unique<RawClient>();
    ASSERT_TRUE(client->Connect(server.port()).ok());
    if (i % 2 == 0) {  // some have served a request, some never sent one
      ASSERT_TRUE(client->Send(GetRequest("/x")).ok());
      ASSERT_TRUE(client->ReadResponse().ok());
    }
    clients.push_back(std::move(client));
  }
  const auto start = std::chrono::steady_clock::now();
  server.Shutdown(seconds(30));
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(10));
  for (auto& client : clients) EXPECT_TRUE(client->WaitForClose());
}

TEST(ShutdownTest, IsIdempotentAndRefusesNewConnections) {
  HttpServer server(ServerOptions{});
  ASSERT_TRUE(server.Start().ok());
  const uint16_t port = server.port();
  server.Shutdown(milliseconds(100));
  server.Shutdown(milliseconds(100));
  RawClient client;
  EXPECT_FALSE(client.Connect(port).ok());
  EXPECT_EQ(server.Start().code(), StatusCode::kFailedPrecondition);
}

TEST(ShutdownTest, NeverStartedServerShutsDownCleanly) {
  HttpServer server(ServerOptions{});
  server.Shutdown();
}

}  // namespace
}  // namespace phalanx::http
