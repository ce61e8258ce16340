#include "operator/controller/token_review.h"

#include <gtest/gtest.h>

namespace phalanx::op {
namespace {

TEST(TokenReviewTest, ExtractsThePodFromABoundToken) {
  auto id = ParseTokenReview(json::Json::parse(R"({"status": {"authenticated": true, "audiences": ["phalanx"],
    "user": {"username": "system:serviceaccount:ml:trainer",
             "extra": {"authentication.kubernetes.io/pod-name": ["llama-a2-0"],
                       "authentication.kubernetes.io/pod-uid": ["u-1"]}}}})"),
                             "phalanx");
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(id->namespace_, "ml");
  EXPECT_EQ(id->service_account, "trainer");
  EXPECT_EQ(id->pod_name, "llama-a2-0");
  EXPECT_EQ(id->pod_uid, "u-1");
}

TEST(TokenReviewTest, RejectsWhatIsNotAPodToken) {
  EXPECT_EQ(ParseTokenReview(json::Json::parse(R"({"status": {"authenticated": false, "error": "expired"}})"), "phalanx")
                .status().code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(ParseTokenReview(json::Json::parse(R"({"status": {"authenticated": true, "audiences": ["api"],
              "user": {"username": "system:serviceaccount:ml:x"}}})"), "phalanx").status().code(),
            StatusCode::kUnauthenticated);
  EXPECT_EQ(ParseTokenReview(json::Json::parse(R"({"status": {"authenticated": true,
              "user": {"username": "alice"}}})"), "phalanx").status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(ParseTokenReview(json::Json::parse(R"({"status": {"authenticated": true,
              "user": {"username": "system:serviceaccount:ml:x"}}})"), "phalanx").status().code(),
            StatusCode::kPermissionDenied);  // legacy secret token: not bound to a pod
}

TEST(TokenReviewTest, BearerHeader) {
  EXPECT_EQ(*BearerToken("Bearer abc"), "abc");
  EXPECT_EQ(BearerToken("Basic abc").status().code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(BearerToken("").status().code(), StatusCode::kUnauthenticated);
}

TEST(TokenReviewTest, RequestCarriesTheAudience) {
  json::Json r = MakeTokenReview("t", "phalanx");
  EXPECT_EQ(r["spec"]["audiences"][0], "phalanx");
  EXPECT_EQ(r["kind"], "TokenReview");
}

}  // namespace
}  // namespace phalanx::op
