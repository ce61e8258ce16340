// HttpServer input limits and protocol errors: 413, 431, 400, Expect: 100-continue, idle timeout.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>

#include "core/http/http_server.h"
#include "tests/unit/core/http/test_client.h"

namespace phalanx::http {
namespace {

using testing::GetRequest;
using testing::RawClient;

class LimitsTest : public ::testing::Test {
 protected:
  void StartServer(ServerOptions options) {
    server_ = std::make_unique<HttpServer>(std::move(options));
    server_->Handle("POST", "/upload", SyncHandler([this](const Request& request) {
                      ++calls_;
                      return Response{200, "text/plain", {}, std::to_string(request.body.size())};
                    }));
    server_->Handle("GET", "/ok", SyncHandler([](const Request&) {
                      return Response{200, "text/plain", {}, "ok"};
                    }));
    ASSERT_TRUE(server_->Start().ok());
    ASSERT_TRUE(client_.Connect(server_->port()).ok());
  }

  std::unique_ptr<HttpServer> server_;
  RawClient client_;
  std::atomic<int> calls_{0};
};

std::string Post(size_t body_size) {
  return "POST /upload HTTP/1.1\r\nHost: t\r\nContent-Length: " + std::to_string(body_size) +
         "\r\n\r\n" + std::string(body_size, 'b');
}

TEST_F(LimitsTest, BodyOverLimitGets413WithoutCallingHandler) {
  ServerOptions options;
  options.max_body_bytes = 1000;
  StartServer(options);
  ASSERT_TRUE(client_.Send(Post(1001)).ok());
  auto response = client_.ReadResponse();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->result_int(), 413);
  EXPECT_EQ((*response)["Content-Type"], "application/json");
  EXPECT_EQ(nlohmann::json::parse(response->body())["message"],
            "request body exceeds the limit of 1000 bytes");
  EXPECT_EQ((*response)["Connection"], "close");
  EXPECT_TRUE(client_.WaitForClose());
  EXPECT_EQ(calls_.load(), 0);
}

TEST_F(LimitsTest, BodyAtLimitIsAccepted) {
  ServerOptions options;
  options.max_body_bytes = 1000;
  StartServer(options);
  ASSERT_TRUE(client_.Send(Post(1000)).ok());
  auto response = client_.ReadResponse();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->result_int(), 200);
  EXPECT_EQ(response->body(), "1000");
}

TEST_F(LimitsTest, ChunkedBodyOverLimitGets413) {
  ServerOptions options;
  options.max_body_bytes = 10;
  StartServer(options);
  ASSERT_TRUE(client_
                  .Send("POST /upload HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                        "8\r\n12345678\r\n8\r\n12345678\r\n0\r\n\r\n")
                  .ok());
  auto response = client_.ReadResponse();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->result_int(), 413);
  EXPECT_EQ(calls_.load(), 0);
}

TEST_F(LimitsTest, LargeBodyOverLimitStillGets413BeforeUploadEnds) {
  // The server answers from the Content-Length alone and lingers, so the client reads the 413
  // even though it sent more than the server will ever read.
  ServerOptions options;
  options.max_body_bytes = 1 << 20;
  StartServer(options);
  ASSERT_TRUE(client_.Send(Post(4 << 20)).ok());
  auto response = client_.ReadResponse();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->result_int(), 413);
}

TEST_F(LimitsTest, MalformedRequestGets400AndConnectionClosed) {
  StartServer(ServerOptions{});
  ASSERT_TRUE(client_.Send("THIS IS NOT HTTP\r\n\r\n").ok());
  auto response = client_.ReadResponse();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->result_int(), 400);
  const auto json = nlohmann::json::parse(response->body());
  EXPECT_EQ(json["reason"], "BadRequest");
  EXPECT_EQ(json["message"].get<std::string>().rfind("malformed HTTP request: ", 0), 0u) << json;
  EXPECT_EQ((*response)["Connection"], "close");
  EXPECT_TRUE(client_.WaitForClose());
}

TEST_F(LimitsTest, BadContentLengthGets400) {
  StartServer(ServerOptions{});
  ASSERT_TRUE(client_.Send("POST /upload HTTP/1.1\r\nHost: t\r\nContent-Length: abc\r\n\r\n").ok());
  auto response = client_.ReadResponse();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->result_int(), 400);
  EXPECT_EQ(calls_.load(), 0);
}

TEST_F(LimitsTest, HeadersOverLimitGet431) {
  ServerOptions options;
  options.max_header_bytes = 1024;
  StartServer(options);
  ASSERT_TRUE(client_.Send(GetRequest("/ok", "X-Big: " + std::string(2000, 'h') + "\r\n")).ok());
  auto response = client_.ReadResponse();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->result_int(), 431);
  EXPECT_TRUE(client_.WaitForClose());
}

TEST_F(LimitsTest, ExpectContinueGets100BeforeBody) {
  StartServer(ServerOptions{});
  ASSERT_TRUE(client_
                  .Send("POST /upload HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n"
                        "Expect: 100-continue\r\n\r\n")
                  .ok());
  auto interim = client_.ReadResponse();
  ASSERT_TRUE(interim.ok()) << interim.status();
  EXPECT_EQ(interim->result_int(), 100);
  ASSERT_TRUE(client_.Send("hello").ok());
  auto response = client_.ReadResponse();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->result_int(), 200);
  EXPECT_EQ(response->body(), "5");
}

TEST_F(LimitsTest, IdleKeepAliveConnectionIsClosedAfterIdleTimeout) {
  ServerOptions options;
  options.idle_timeout = std::chrono::seconds(1);
  StartServer(options);
  ASSERT_TRUE(client_.Send(GetRequest("/ok")).ok());
  auto response = client_.ReadResponse();
  ASSERT_TRUE(response.ok()) << response.status();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(client_.WaitForClose());  // deadline 20 s; expected after ~1 s
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(900));
}

}  // namespace
}  // namespace phalanx::http
