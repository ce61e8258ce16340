// HttpServer asynchronous replies: held requests answered later from other threads, handlers
// that drop or misuse their writer, and many concurrent held requests without a thread each.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>

#include <atomic>
#include <fstream>
#include <thread>

#include "core/http/http_server.h"
#include "tests/unit/core/http/test_client.h"

namespace phalanx::http {
namespace {

using testing::GetRequest;
using testing::HeldWriters;
using testing::RawClient;
using testing::WaitUntil;

int ProcessThreadCount() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  }
  return -1;
}

TEST(AsyncReplyTest, RepliesFromAnotherThreadAfterADelay) {
  HttpServer server(ServerOptions{});
  HeldWriters held;
  server.Handle("POST", "/bind", held.Hold());
  ASSERT_TRUE(server.Start().ok());
  RawClient client;
  ASSERT_TRUE(client.Connect(server.port()).ok());
  ASSERT_TRUE(client.Send("POST /bind HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\n{}").ok());
  ASSERT_TRUE(WaitUntil([&] { return held.size() == 1; }));
  std::thread replier([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the point of the test: later
    std::vector<ResponseWriter> writers = held.Take();
    writers[0].Reply(Response{200, "application/json", {}, R"({"Error":""})"});
  });
  auto response = client.ReadResponse();
  replier.join();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->result_int(), 200);
  EXPECT_EQ(response->body(), R"({"Error":""})");
  // The connection is reusable after a late reply.
  ASSERT_TRUE(client.Send("POST /bind HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n").ok());
  ASSERT_TRUE(WaitUntil([&] { return held.size() == 1; }));
  held.Take()[0].Reply(Response{204, "", {}, ""});
  auto second = client.ReadResponse();
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->result_int(), 204);
}

TEST(AsyncReplyTest, HandlerThatDropsItsWriterGets500) {
  HttpServer server(ServerOptions{});
  server.Handle("GET", "/drop", [](Request&&, ResponseWriter&& writer) {
    ResponseWriter dropped = std::move(writer);  // destroyed without a reply
  });
  ASSERT_TRUE(server.Start().ok());
  RawClient client;
  ASSERT_TRUE(client.Connect(server.port()).ok());
  ASSERT_TRUE(client.Send(GetRequest("/drop")).ok());
  auto response = client.ReadResponse();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->result_int(), 500);
  EXPECT_NE(response->body().find("handler did not reply"), std::string::npos) << response->body();
}

// Abort(): no response at all, the connection reset (fault injection in test servers); the server
// goes on serving other connections.
TEST(AsyncReplyTest, AbortResetsTheConnectionWithoutAResponse) {
  HttpServer server(ServerOptions{});
  server.Handle("GET", "/abort", [](Request&&, ResponseWriter&& writer) { writer.Abort(); });
  server.Handle("GET", "/ok", [](const Request&) { return Response{200, "text/plain", {}, "ok"}; });
  ASSERT_TRUE(server.Start().ok());
  RawClient client;
  ASSERT_TRUE(client.Connect(server.port()).ok());
  ASSERT_TRUE(client.Send(GetRequest("/abort")).ok());
  auto response = client.ReadResponse();
  EXPECT_FALSE(response.ok()) << "got HTTP " << response->result_int();
  RawClient other;
  ASSERT_TRUE(other.Connect(server.port()).ok());
  ASSERT_TRUE(other.Send(GetRequest("/ok")).ok());
  auto ok = other.ReadResponse();
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->result_int(), 200);
}

TEST(AsyncReplyTest, HandlerExceptionGets500AndServerKeepsServing) {
  HttpServer server(ServerOptions{});
  server.Handle("GET", "/throw", SyncHandler([](const Request&) -> Response {
                  throw std::runtime_error("boom");
                }));
  server.Handle("GET", "/ok", SyncHandler([](const Request&) { return Response{200, "", {}, "ok"}; }));
  ASSERT_TRUE(server.Start().ok());
  RawClient client;
  ASSERT_TRUE(client.Connect(server.port()).ok());
  ASSERT_TRUE(client.Send(GetRequest("/throw")).ok());
  auto response = client.ReadResponse();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->result_int(), 500);
  EXPECT_NE(response->body().find("handler failed: boom"), std::string::npos) << response->body();
  ASSERT_TRUE(client.Send(GetRequest("/ok")).ok());
  auto ok = client.ReadResponse();
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->body(), "ok");
}

TEST(AsyncReplyTest, SecondReplyIsIgnored) {
  HttpServer server(ServerOptions{});
  server.Handle("GET", "/twice", [](Request&&, ResponseWriter&& writer) {
    writer.Reply(Response{200, "text/plain", {}, "first"});
    writer.Reply(Response{500, "text/plain", {}, "second"});
  });
  ASSERT_TRUE(server.Start().ok());
  RawClient client;
  ASSERT_TRUE(client.Connect(server.port()).ok());
  ASSERT_TRUE(client.Send(GetRequest("/twice") + GetRequest("/twice")).ok());
  for (int i = 0; i < 2; ++i) {
    auto response = client.ReadResponse();
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(response->body(), "first");
  }
}

TEST(AsyncReplyTest, ClientGoneTurnsTrueWhenHeldClientDisconnects) {
  HttpServer server(ServerOptions{});
  HeldWriters held;
  server.Handle("GET", "/hold", held.Hold());
  ASSERT_TRUE(server.Start().ok());
  RawClient client;
  ASSERT_TRUE(client.Connect(server.port()).ok());
  ASSERT_TRUE(client.Send(GetRequest("/hold")).ok());
  ASSERT_TRUE(WaitUntil([&] { return held.size() == 1; }));
  std::vector<ResponseWriter> writers = held.Take();
  EXPECT_FALSE(writers[0].ClientGone());
  client.Close();
  EXPECT_TRUE(WaitUntil([&] { return writers[0].ClientGone(); }));
  writers[0].Reply(Response{});  // harmless
}

// docs/architecture.md §6 "held binds": thousands of requests held open at once, answered later from another
// thread, without a thread per request.
TEST(AsyncReplyTest, AnswersManyConcurrentHeldRequestsFromAnotherThread) {
  constexpr int kRequests = 600;
  HttpServer server(ServerOptions{});
  HeldWriters held;
  server.Handle("POST", "/bind", held.Hold());
  // ThreadSanitizer starts a thread of its own with the process's first pthread_create: let that
  // happen before counting, so it is not taken for one of the server's.
  std::thread([] {}).join();
  const int threads_before = ProcessThreadCount();  // includes cpprest's pool if other tests ran
  ASSERT_TRUE(server.Start().ok());

  // All clients on one io_context thread: async connect, write, read.
  namespace beast = boost::beast;
  boost::asio::io_context io;
  struct Client {
    explicit Client(boost::asio::io_context& io) : stream(io) {}
    beast::tcp_stream stream;
    std::string request;
    beast::flat_buffer buffer;
    beast::http::response<beast::http::string_body> response;
    bool done = false;
  };
  std::vector<std::unique_ptr<Client>> clients;
  const boost::asio::ip::tcp::endpoint endpoint(boost::asio::ip::make_address("127.0.0.1"),
                                                server.port());
  std::atomic<int> completed{0};
  for (int i = 0; i < kRequests; ++i) {
    auto client = std::make_unique<Client>(io);
    Client* c = client.get();
    c->request = "POST /bind HTTP/1.1\r\nHost: t\r\nContent-Length: " +
                 std::to_string(std::to_string(i).size()) + "\r\n\r\n" + std::to_string(i);
    c->stream.expires_after(testing::kTestDeadline);
    c->stream.async_connect(endpoint, [c, &completed](beast::error_code ec) {
      if (ec) return;
      boost::asio::async_write(c->stream, boost::asio::buffer(c->request),
                               [c, &completed](beast::error_code ec2, size_t) {
                                 if (ec2) return;
                                 beast::http::async_read(c->stream, c->buffer, c->response,
                                                         [c, &completed](beast::error_code ec3, size_t) {
                                                           c->done = !ec3;
                                                           ++completed;
                                                         });
                               });
    });
    clients.push_back(std::move(client));
  }
  std::thread io_thread([&io] { io.run(); });

  ASSERT_TRUE(WaitUntil([&] { return held.size() == kRequests; })) << held.size();
  // Held requests cost no thread: only the server's 2 io threads and this test's io thread
  // were added.
  const int added_threads = ProcessThreadCount() - threads_before;
  EXPECT_LE(added_threads, 3) << "threads added while " << kRequests << " requests are held";
  EXPECT_EQ(completed.load(), 0);

  std::vector<Request> requests;
  std::vector<ResponseWriter> writers = held.Take(&requests);
  std::thread replier([&] {
    for (size_t i = 0; i < writers.size(); ++i) {
      writers[i].Reply(Response{200, "text/plain", {}, "bound " + requests[i].body});
    }
  });
  replier.join();
  io_thread.join();  // returns once every client has its response (or timed out)
  int ok = 0;
  for (int i = 0; i < kRequests; ++i) {
    if (clients[i]->done && clients[i]->response.body() == "bound " + std::to_string(i)) ++ok;
  }
  EXPECT_EQ(ok, kRequests);
}

}  // namespace
}  // namespace phalanx::http
