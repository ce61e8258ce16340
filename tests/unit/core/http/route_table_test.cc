#include "core/http/route_table.h"

#include <gtest/gtest.h>

#include <string>

namespace phalanx::http {
namespace {

// A handler that tags the request so tests can tell which route matched.
Handler Tag(std::string tag) {
  return [tag](Request&& request, ResponseWriter&&) { request.body = tag; };
}

// Runs the matched handler and returns its tag.
std::string Matched(const RouteTable& table, std::string_view method, std::string_view path) {
  const RouteTable::Match match = table.Find(method, path);
  if (match.handler == nullptr) return "status " + std::to_string(match.status);
  Request request;
  (*match.handler)(std::move(request), ResponseWriter());  // Request&&: the tag lands in `request`
  return request.body;
}

TEST(RouteTableTest, ExactRouteMatchesOnlyItsPathAndMethod) {
  RouteTable table;
  table.Add("GET", "/healthz", Tag("health"));
  EXPECT_EQ(Matched(table, "GET", "/healthz"), "health");
  EXPECT_EQ(Matched(table, "GET", "/healthz/"), "status 404");
  EXPECT_EQ(Matched(table, "GET", "/other"), "status 404");
  const RouteTable::Match wrong = table.Find("POST", "/healthz");
  EXPECT_EQ(wrong.handler, nullptr);
  EXPECT_EQ(wrong.status, 405);
  EXPECT_EQ(wrong.allow, "GET");
}

TEST(RouteTableTest, LongestPrefixWinsRegardlessOfRegistrationOrder) {
  RouteTable table;
  table.AddPrefix("GET", "/api/", Tag("api"));
  table.AddPrefix("GET", "/api/v1/namespaces/", Tag("namespaced"));
  table.AddPrefix("GET", "/api/v1/", Tag("v1"));
  EXPECT_EQ(Matched(table, "GET", "/api/v1/namespaces/ml/pods"), "namespaced");
  EXPECT_EQ(Matched(table, "GET", "/api/v1/nodes"), "v1");
  EXPECT_EQ(Matched(table, "GET", "/api/v2"), "api");
  EXPECT_EQ(Matched(table, "GET", "/apis"), "status 404");
}

TEST(RouteTableTest, ExactRouteBeatsPrefixAndStarMatchesAnyMethod) {
  RouteTable table;
  table.AddPrefix("*", "/", Tag("catch-all"));
  table.Add("POST", "/filter", Tag("filter"));
  EXPECT_EQ(Matched(table, "POST", "/filter"), "filter");
  // The exact path exists only for POST, so GET falls through to the prefix route.
  EXPECT_EQ(Matched(table, "GET", "/filter"), "catch-all");
  EXPECT_EQ(Matched(table, "DELETE", "/anything"), "catch-all");
}

TEST(RouteTableTest, PrefixWithOtherMethodFallsBackToShorterPrefix) {
  RouteTable table;
  table.AddPrefix("GET", "/a/", Tag("get-a"));
  table.AddPrefix("POST", "/a/b/", Tag("post-ab"));
  EXPECT_EQ(Matched(table, "GET", "/a/b/c"), "get-a");
  EXPECT_EQ(Matched(table, "POST", "/a/b/c"), "post-ab");
}

TEST(RouteTableTest, MethodNotAllowedListsEveryMatchingMethod) {
  RouteTable table;
  table.Add("GET", "/x", Tag("g"));
  table.Add("PUT", "/x", Tag("p"));
  table.AddPrefix("DELETE", "/", Tag("d"));
  table.AddPrefix("PATCH", "/y", Tag("other"));  // does not match /x
  const RouteTable::Match match = table.Find("POST", "/x");
  EXPECT_EQ(match.status, 405);
  EXPECT_EQ(match.allow, "DELETE, GET, PUT");
}

TEST(RouteTableTest, LaterRegistrationReplacesEarlierOne) {
  RouteTable table;
  table.Add("GET", "/x", Tag("old"));
  table.Add("GET", "/x", Tag("new"));
  table.AddPrefix("GET", "/p", Tag("old-prefix"));
  table.AddPrefix("GET", "/p", Tag("new-prefix"));
  EXPECT_EQ(Matched(table, "GET", "/x"), "new");
  EXPECT_EQ(Matched(table, "GET", "/p/q"), "new-prefix");
}

}  // namespace
}  // namespace phalanx::http
