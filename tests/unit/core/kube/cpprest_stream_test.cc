// Streamed responses over the cpprest transport (watches): a line and the unread backlog are
// bounded (CpprestTransportOptions, docs/hardening.md "Watch event backlogs").
#include "core/kube/cpprest_transport.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "tests/unit/core/kube/test_server.h"

namespace phalanx::kube {
namespace {

using testing::ScriptedServer;
using testing::WaitUntil;
using namespace std::chrono_literals;

std::unique_ptr<ResponseStream> Open(const ScriptedServer& server, const CpprestTransportOptions& options) {
  auto transport = MakeCpprestTransport(server.Config(), options);
  EXPECT_TRUE(transport.ok()) << transport.status();
  if (!transport.ok()) return nullptr;
  HttpRequest request;
  request.target = "/api/v1/pods?watch=1";
  auto stream = (*transport)->OpenStream(request);
  EXPECT_TRUE(stream.ok()) << stream.status();
  return stream.ok() ? std::move(*stream) : nullptr;
}

// A server (or a proxy) that sends a line and never its end: the old reader kept appending to it.
TEST(CpprestStreamTest, ALineOverTheLimitIsRefusedNotBuffered) {
  ScriptedServer server;
  ASSERT_TRUE(server.started().ok()) << server.started();
  server.SetAsync([](const http::Request&, http::ResponseWriter&& w) {
    w.StartStream(200, "application/json");
    w.WriteChunk("{\"type\":\"ADDED\",\"object\":{}}\n");
    for (int i = 0; i < 16; ++i) w.WriteChunk(std::string(16 << 10, 'x'));  // 256 KiB, no '\n'
    w.EndStream();
  });
  CpprestTransportOptions options;
  options.max_stream_line_bytes = 64 << 10;
  auto stream = Open(server, options);
  ASSERT_NE(stream, nullptr);
  std::string line;
  auto first = stream->ReadLine(line);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(line, "{\"type\":\"ADDED\",\"object\":{}}");
  auto second = stream->ReadLine(line);
  ASSERT_FALSE(second.ok()) << "read a line of " << line.size() << " bytes";
  EXPECT_EQ(second.status().code(), StatusCode::kResourceExhausted) << second.status();
  EXPECT_NE(second.status().message().find("exceeds the limit of 65536 bytes"), std::string::npos) << second.status();
  EXPECT_FALSE(stream->ReadLine(line).ok());  // cancelled: nothing more is read
}

// A reader far behind a busy stream: cpprest buffered everything the socket delivered.
TEST(CpprestStreamTest, AnUnreadBacklogOverTheLimitEndsTheStream) {
  ScriptedServer server;
  ASSERT_TRUE(server.started().ok()) << server.started();
  std::atomic<bool> sent{false};
  constexpr int kLines = 4000;  // ~400 KiB
  server.SetAsync([&sent](const http::Request&, http::ResponseWriter&& w) {
    w.StartStream(200, "application/json");
    for (int i = 0; i < kLines; ++i) w.WriteChunk(fmt::format("{{\"type\":\"ADDED\",\"n\":{:0>80}}}\n", i));
    sent = true;
    w.EndStream();
  });
  CpprestTransportOptions options;
  options.max_stream_backlog_bytes = 64 << 10;
  auto stream = Open(server, options);
  ASSERT_NE(stream, nullptr);
  std::string line;
  ASSERT_TRUE(stream->ReadLine(line).ok());
  ASSERT_TRUE(WaitUntil([&] { return sent.load(); }));
  std::this_thread::sleep_for(500ms);  // loopback: the client has buffered the rest long before
  int read = 1;
  Status failed;
  while (read < kLines) {
    auto r = stream->ReadLine(line);
    if (!r.ok()) {
      failed = r.status();
      break;
    }
    ASSERT_TRUE(*r);
    ++read;
  }
  EXPECT_EQ(failed.code(), StatusCode::kResourceExhausted) << "read all " << read << " lines";
  EXPECT_NE(failed.message().find("not yet read exceed the limit of 65536 bytes"), std::string::npos) << failed;
}

TEST(CpprestStreamTest, LinesUnderTheLimitsAreReadWhole) {
  ScriptedServer server;
  ASSERT_TRUE(server.started().ok()) << server.started();
  const std::string big(48 << 10, 'y');
  server.SetAsync([&big](const http::Request&, http::ResponseWriter&& w) {
    w.StartStream(200, "application/json");
    w.WriteChunk(big.substr(0, 1000));
    w.WriteChunk(big.substr(1000) + "\n{}\n");
    w.EndStream();
  });
  CpprestTransportOptions options;
  options.max_stream_line_bytes = 64 << 10;
  options.max_stream_backlog_bytes = 128 << 10;
  auto stream = Open(server, options);
  ASSERT_NE(stream, nullptr);
  std::string line;
  auto r = stream->ReadLine(line);
  ASSERT_TRUE(r.ok() && *r) << r.status();
  EXPECT_EQ(line, big);
  r = stream->ReadLine(line);
  ASSERT_TRUE(r.ok() && *r) << r.status();
  EXPECT_EQ(line, "{}");
  r = stream->ReadLine(line);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(*r);  // the end
}

}  // namespace
}  // namespace phalanx::kube
