#include "core/kube/api_error.h"

#include <gtest/gtest.h>

#include "core/kube/resource.h"

namespace phalanx::kube {
namespace {

TEST(ApiErrorTest, DecodesStatusObjects) {
  const std::string body = R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
    "message":"pods \"a\" not found","reason":"NotFound","details":{"name":"a","kind":"pods"},"code":404})";
  ApiError e = DecodeApiError(404, body);
  EXPECT_EQ(e.reason, Reason::kNotFound);
  EXPECT_EQ(e.http_code, 404);
  EXPECT_EQ(e.message, "pods \"a\" not found");
  EXPECT_EQ(e.name, "a");
  Status s = ToStatus(e);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "NotFound (HTTP 404): pods \"a\" not found");
  EXPECT_TRUE(IsNotFound(s));
  EXPECT_TRUE(IsNotFound(s.WithContext("get pod ml/a")));
  EXPECT_FALSE(IsConflict(s));
}

TEST(ApiErrorTest, MapsEveryReasonToItsRetryMeaning) {
  struct Case {
    int code;
    const char* reason;
    StatusCode want;
    bool (*pred)(const Status&);
  };
  const Case cases[] = {
      {409, "AlreadyExists", StatusCode::kAlreadyExists, IsAlreadyExists},
      {409, "Conflict", StatusCode::kAborted, IsConflict},
      {410, "Gone", StatusCode::kOutOfRange, IsGone},
      {410, "Expired", StatusCode::kOutOfRange, IsGone},
      {403, "Forbidden", StatusCode::kPermissionDenied, IsForbidden},
      {401, "Unauthorized", StatusCode::kUnauthenticated, IsUnauthorized},
      {422, "Invalid", StatusCode::kInvalidArgument, IsInvalid},
      {400, "BadRequest", StatusCode::kInvalidArgument, IsBadRequest},
      {429, "TooManyRequests", StatusCode::kUnavailable, IsTooManyRequests},
      {504, "ServerTimeout", StatusCode::kUnavailable, IsServerTimeout},
      {504, "Timeout", StatusCode::kUnavailable, IsServerTimeout},
  };
  for (const auto& c : cases) {
    const std::string body = std::string(R"({"kind":"Status","message":"m","reason":")") + c.reason +
                             R"(","code":)" + std::to_string(c.code) + "}";
    Status s = ToStatus(DecodeApiError(c.code, body));
    EXPECT_EQ(s.code(), c.want) << c.reason;
    EXPECT_TRUE(c.pred(s)) << c.reason << " " << s;
  }
}

TEST(ApiErrorTest, NonStatusBodiesFallBackToTheHttpCode) {
  ApiError e = DecodeApiError(409, "");
  EXPECT_EQ(e.reason, Reason::kConflict);
  EXPECT_EQ(e.message, "the server returned HTTP 409");
  e = DecodeApiError(502, "<html>Bad Gateway</html>\nmore");
  EXPECT_EQ(e.reason, Reason::kUnknown);
  EXPECT_EQ(e.message, "<html>Bad Gateway</html>");
  EXPECT_EQ(ToStatus(e).code(), StatusCode::kUnavailable);
  e = DecodeApiError(429, R"({"kind":"Status","code":429,"details":{"retryAfterSeconds":3}})");
  EXPECT_EQ(e.reason, Reason::kTooManyRequests);
  EXPECT_EQ(e.retry_after_seconds, 3);
}

TEST(ApiErrorTest, ReasonOfIgnoresOtherStatuses) {
  EXPECT_EQ(ReasonOf(OkStatus()), Reason::kUnknown);
  EXPECT_EQ(ReasonOf(NotFoundError("plain")), Reason::kUnknown);
  EXPECT_FALSE(IsConflict(AbortedError("plain")));
}

TEST(ResourceTest, PathsForCoreNamedAndCustomResources) {
  using namespace resources;  // NOLINT
  EXPECT_EQ(ResourcePath(kPods, "ml", "a"), "/api/v1/namespaces/ml/pods/a");
  EXPECT_EQ(ResourcePath(kPods, ""), "/api/v1/pods");
  EXPECT_EQ(ResourcePath(kPods, "ml", "a", "binding"), "/api/v1/namespaces/ml/pods/a/binding");
  EXPECT_EQ(ResourcePath(kNodes, "ignored", "n1"), "/api/v1/nodes/n1");
  EXPECT_EQ(ResourcePath(kLeases, "kube-system", "phalanx-extender"),
            "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/phalanx-extender");
  EXPECT_EQ(ResourcePath(kTrainingJobs, "ml", "tj", "status"),
            "/apis/phalanx.io/v1alpha1/namespaces/ml/trainingjobs/tj/status");
  EXPECT_EQ(kEvents.ApiVersion(), "events.k8s.io/v1");
  EXPECT_EQ(kPods.ApiVersion(), "v1");
  EXPECT_EQ(QueryString({{"labelSelector", "a=b,c in (x y)"}, {"limit", "5"}}),
            "?labelSelector=a%3Db%2Cc%20in%20%28x%20y%29&limit=5");
  EXPECT_EQ(QueryString({}), "");
}

}  // namespace
}  // namespace phalanx::kube
