#include "core/http/wire_format.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace phalanx::http::internal {
namespace {

TEST(WireFormatTest, FormatsContentLengthResponseHead) {
  HeadOptions options;
  options.content_length = 42;
  EXPECT_EQ(FormatResponseHead(200, "application/json", {{"X-Trace", "abc"}}, options),
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Trace: abc\r\n"
            "Content-Length: 42\r\n\r\n");
}

TEST(WireFormatTest, FormatsChunkedCloseAndHttp10KeepAlive) {
  HeadOptions chunked;
  chunked.framing = Framing::kChunked;
  chunked.close = true;
  EXPECT_EQ(FormatResponseHead(200, "application/json", {}, chunked),
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
            "Connection: close\r\n\r\n");
  HeadOptions http10;
  http10.http10_keep_alive = true;
  EXPECT_EQ(FormatResponseHead(404, "", {}, http10),
            "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: keep-alive\r\n\r\n");
}

TEST(WireFormatTest, DropsServerOwnedAndInvalidHeadersAndNeutralisesLineBreaks) {
  HeadOptions options;
  const std::string head = FormatResponseHead(
      201, "text/plain",
      {{"content-length", "999"}, {"Transfer-Encoding", "gzip"}, {"Connection", "upgrade"},
       {"Bad Name", "x"}, {"", "x"}, {"X-Split", "a\r\nSet-Cookie: evil"}},
      options);
  EXPECT_EQ(head,
            "HTTP/1.1 201 Created\r\nContent-Type: text/plain\r\nX-Split: a  Set-Cookie: evil\r\n"
            "Content-Length: 0\r\n\r\n");
}

TEST(WireFormatTest, OmitsContentLengthFor204AndUnknownReasonPhrase) {
  HeadOptions options;
  EXPECT_EQ(FormatResponseHead(204, "", {}, options), "HTTP/1.1 204 No Content\r\n\r\n");
  EXPECT_EQ(ReasonPhrase(299), "Unknown");
  EXPECT_EQ(ReasonPhrase(503), "Service Unavailable");
  EXPECT_FALSE(StatusAllowsBody(304));
  EXPECT_TRUE(StatusAllowsBody(200));
}

TEST(WireFormatTest, FramesChunksInHex) {
  EXPECT_EQ(FrameChunk("hello"), "5\r\nhello\r\n");
  EXPECT_EQ(FrameChunk(std::string(255, 'x')).substr(0, 4), "ff\r\n");
  EXPECT_EQ(kLastChunk, "0\r\n\r\n");
}

TEST(WireFormatTest, EscapesJsonStrings) {
  std::string out;
  AppendJsonString(&out, "a\"b\\c\nd\x01");
  EXPECT_EQ(out, R"("a\"b\\c\nd\u0001")");
}

TEST(WireFormatTest, ErrorResponseIsAKubernetesStatusObject) {
  const Response response = ErrorResponse(404, "no route for GET /x\"y");
  EXPECT_EQ(response.status, 404);
  EXPECT_EQ(response.content_type, "application/json");
  const auto json = nlohmann::json::parse(response.body);
  EXPECT_EQ(json["kind"], "Status");
  EXPECT_EQ(json["status"], "Failure");
  EXPECT_EQ(json["reason"], "NotFound");
  EXPECT_EQ(json["code"], 404);
  EXPECT_EQ(json["message"], "no route for GET /x\"y");
  EXPECT_EQ(nlohmann::json::parse(ErrorResponse(413, "big").body)["reason"], "RequestEntityTooLarge");
  EXPECT_EQ(nlohmann::json::parse(ErrorResponse(500, "bug").body)["reason"], "InternalError");
}

}  // namespace
}  // namespace phalanx::http::internal
