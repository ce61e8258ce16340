#include "core/http/request_target.h"

#include <gtest/gtest.h>

#include "core/http/http_server.h"

namespace phalanx::http {
namespace {

using Query = std::vector<std::pair<std::string, std::string>>;

TEST(PercentDecodeTest, DecodesEscapesAndPlusOnlyWhenAsked) {
  EXPECT_EQ(PercentDecode("a%3Db%2Cc", true), "a=b,c");
  EXPECT_EQ(PercentDecode("a%3db", true), "a=b");  // lower-case hex
  EXPECT_EQ(PercentDecode("x+y", true), "x y");
  EXPECT_EQ(PercentDecode("x+y", false), "x+y");
  EXPECT_EQ(PercentDecode("%E2%9C%93", true), "\xE2\x9C\x93");
}

TEST(PercentDecodeTest, KeepsMalformedEscapesLiterally) {
  EXPECT_EQ(PercentDecode("100%", true), "100%");
  EXPECT_EQ(PercentDecode("%4", true), "%4");
  EXPECT_EQ(PercentDecode("%zz1", true), "%zz1");
  EXPECT_EQ(PercentDecode("%%41", true), "%A");
}

TEST(ParseTargetTest, SplitsPathAndDecodesQueryInOrder) {
  std::string path;
  Query query;
  ParseTarget("/api/v1/pods?watch=1&labelSelector=a%3Db&fieldSelector=spec.nodeName%3Dn+1", &path,
              &query);
  EXPECT_EQ(path, "/api/v1/pods");
  EXPECT_EQ(query, (Query{{"watch", "1"}, {"labelSelector", "a=b"},
                          {"fieldSelector", "spec.nodeName=n 1"}}));
}

TEST(ParseTargetTest, KeepsPathEncodedAndHandlesOddSegments) {
  std::string path;
  Query query;
  ParseTarget("/a%2Fb?&flag&x=&=v&&y=1=2", &path, &query);
  EXPECT_EQ(path, "/a%2Fb");
  EXPECT_EQ(query, (Query{{"flag", ""}, {"x", ""}, {"", "v"}, {"y", "1=2"}}));
}

TEST(ParseTargetTest, NoQueryGivesEmptyList) {
  std::string path;
  Query query{{"stale", "1"}};
  ParseTarget("/healthz", &path, &query);
  EXPECT_EQ(path, "/healthz");
  EXPECT_TRUE(query.empty());
  ParseTarget("/x?", &path, &query);
  EXPECT_EQ(path, "/x");
  EXPECT_TRUE(query.empty());
}

TEST(RequestTest, HeaderValueIsCaseInsensitiveAndEmptyWhenAbsent) {
  Request request;
  request.headers = {{"Content-Type", "application/json"}, {"X-Two", "a"}, {"x-two", "b"}};
  EXPECT_EQ(request.HeaderValue("content-type"), "application/json");
  EXPECT_EQ(request.HeaderValue("CONTENT-TYPE"), "application/json");
  EXPECT_EQ(request.HeaderValue("x-two"), "a");  // first one wins
  EXPECT_EQ(request.HeaderValue("Accept"), "");
}

TEST(RequestTest, QueryValueReturnsFirstValueOrNullopt) {
  Request request;
  request.query = {{"a", "1"}, {"b", ""}, {"a", "2"}};
  ASSERT_TRUE(request.QueryValue("a").has_value());
  EXPECT_EQ(*request.QueryValue("a"), "1");
  ASSERT_TRUE(request.QueryValue("b").has_value());
  EXPECT_EQ(*request.QueryValue("b"), "");
  EXPECT_FALSE(request.QueryValue("A").has_value());  // names are case-sensitive
}

}  // namespace
}  // namespace phalanx::http
