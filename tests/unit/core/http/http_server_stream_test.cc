// HttpServer streaming replies (Kubernetes watch): chunked transfer, incremental delivery,
// client departure, slow clients.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "core/http/http_server.h"
#include "tests/unit/core/http/test_client.h"

namespace phalanx::http {
namespace {

using testing::GetRequest;
using testing::HeldWriters;
using testing::RawClient;
using testing::WaitUntil;

class StreamTest : public ::testing::Test {
 protected:
  void StartServer(ServerOptions options = {}) {
    server_ = std::make_unique<HttpServer>(std::move(options));
    server_->Handle("GET", "/watch", held_.Hold());
    server_->Handle("GET", "/plain", SyncHandler([](const Request&) {
                      return Response{200, "text/plain", {}, "plain"};
                    }));
    ASSERT_TRUE(server_->Start().ok());
    ASSERT_TRUE(client_.Connect(server_->port()).ok());
  }

  // Sends GET /watch and returns its writer once the handler holds it.
  ResponseWriter OpenWatch() {
    EXPECT_TRUE(client_.Send(GetRequest("/watch")).ok());
    EXPECT_TRUE(WaitUntil([&] { return held_.size() == 1; }));
    std::vector<ResponseWriter> writers = held_.Take();
    return writers.empty() ? ResponseWriter() : std::move(writers[0]);
  }

  std::unique_ptr<HttpServer> server_;
  HeldWriters held_;
  RawClient client_;
};

TEST_F(StreamTest, DeliversEachChunkBeforeTheNextIsWritten) {
  StartServer();
  ResponseWriter writer = OpenWatch();
  writer.StartStream(200, "application/json", {{"X-Stream", "1"}});
  ASSERT_TRUE(writer.WriteChunk(R"({"type":"ADDED"})" "\n"));
  ASSERT_TRUE(client_.ReadHeader().ok());
  EXPECT_EQ(client_.streamed().result_int(), 200);
  EXPECT_EQ(client_.streamed()["Transfer-Encoding"], "chunked");
  EXPECT_EQ(client_.streamed()["X-Stream"], "1");
  // The client has the first event while the server has not written the second one yet.
  auto first = client_.ReadBodyUntil("ADDED");
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(*first, "{\"type\":\"ADDED\"}\n");
  EXPECT_FALSE(client_.stream_done());

  ASSERT_TRUE(writer.WriteChunk(R"({"type":"MODIFIED"})" "\n"));
  auto second = client_.ReadBodyUntil("MODIFIED");
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(*second, "{\"type\":\"ADDED\"}\n{\"type\":\"MODIFIED\"}\n");
  writer.EndStream();
  ASSERT_TRUE(client_.ReadStreamEnd().ok());

  // EndStream leaves the connection reusable.
  ASSERT_TRUE(client_.Send(GetRequest("/plain")).ok());
  auto next = client_.ReadResponse();
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(next->body(), "plain");
}

TEST_F(StreamTest, StreamsFromAnotherThread) {
  StartServer();
  ResponseWriter writer = OpenWatch();
  std::thread producer([w = std::move(writer)]() mutable {
    w.StartStream(200, "application/json");
    for (int i = 0; i < 100; ++i) w.WriteChunk("event-" + std::to_string(i) + ";");
    w.EndStream();
  });
  ASSERT_TRUE(client_.ReadHeader().ok());
  ASSERT_TRUE(client_.ReadStreamEnd().ok());
  producer.join();
  std::string want;
  for (int i = 0; i < 100; ++i) want += "event-" + std::to_string(i) + ";";
  EXPECT_EQ(client_.streamed().body(), want);
}

TEST_F(StreamTest, ClientGoneTurnsTrueWhenClientDisconnectsMidStream) {
  StartServer();
  ResponseWriter writer = OpenWatch();
  writer.StartStream(200, "application/json");
  ASSERT_TRUE(writer.WriteChunk("first\n"));
  ASSERT_TRUE(client_.ReadHeader().ok());
  ASSERT_TRUE(client_.ReadBodyUntil("first").ok());
  EXPECT_FALSE(writer.ClientGone());
  client_.Close();
  EXPECT_TRUE(WaitUntil([&] { return writer.ClientGone(); }));
  EXPECT_FALSE(writer.WriteChunk("after\n"));
}

TEST_F(StreamTest, WriterDroppedMidStreamEndsTheStream) {
  StartServer();
  {
    ResponseWriter writer = OpenWatch();
    writer.StartStream(200, "text/plain");
    writer.WriteChunk("partial");
  }
  ASSERT_TRUE(client_.ReadHeader().ok());
  ASSERT_TRUE(client_.ReadStreamEnd().ok());
  EXPECT_EQ(client_.streamed().body(), "partial");
  EXPECT_TRUE(client_.WaitForClose());  // cut short: not reused
}

TEST_F(StreamTest, SlowClientIsCutOffAtTheBacklogLimit) {
  ServerOptions options;
  options.max_stream_backlog_bytes = 256 << 10;
  StartServer(options);
  ResponseWriter writer = OpenWatch();
  writer.StartStream(200, "application/octet-stream");
  // The client never reads: kernel buffers fill, then the backlog. 64 MiB is far more than
  // loopback socket buffers plus 256 KiB can hold.
  const std::string chunk(64 << 10, 'x');
  int accepted = 0;
  while (accepted < 1024 && writer.WriteChunk(chunk)) ++accepted;
  EXPECT_LT(accepted, 1024);
  EXPECT_TRUE(writer.ClientGone());
  EXPECT_FALSE(writer.WriteChunk(chunk));
}

TEST_F(StreamTest, StreamToHttp10ClientEndsWithClose) {
  StartServer();
  ASSERT_TRUE(client_.Send("GET /watch HTTP/1.0\r\n\r\n").ok());
  ASSERT_TRUE(WaitUntil([&] { return held_.size() == 1; }));
  ResponseWriter writer = std::move(held_.Take()[0]);
  writer.StartStream(200, "text/plain");
  writer.WriteChunk("raw bytes");
  writer.EndStream();
  ASSERT_TRUE(client_.ReadHeader().ok());
  EXPECT_EQ(client_.streamed()["Transfer-Encoding"], "");  // HTTP/1.0 has no chunking
  ASSERT_TRUE(client_.ReadStreamEnd().ok());              // the body ends at close
  EXPECT_EQ(client_.streamed().body(), "raw bytes");
}

}  // namespace
}  // namespace phalanx::http
