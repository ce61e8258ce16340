#include "core/base/status.h"

#include <gtest/gtest.h>

#include "core/base/backoff.h"
#include "core/base/ids.h"
#include "core/base/result.h"

namespace phalanx {
namespace {

TEST(StatusTest, DefaultIsOkWithEmptyMessage) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kOk);
  EXPECT_EQ(s.message(), "");
  EXPECT_EQ(s.ToString(), "OK");
}

TEST(StatusTest, ErrorKeepsCodeAndMessage) {
  Status s = NotFoundError("pod ml/a not found");
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(IsNotFound(s));
  EXPECT_EQ(s.ToString(), "NOT_FOUND: pod ml/a not found");
}

TEST(StatusTest, OkCodeDropsMessage) {
  Status s(StatusCode::kOk, "ignored");
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.message(), "");
}

TEST(StatusTest, WithContextPrefixesAndKeepsCode) {
  Status s = AbortedError("409 Conflict").WithContext("patch node gpu-1");
  EXPECT_EQ(s.code(), StatusCode::kAborted);
  EXPECT_EQ(s.message(), "patch node gpu-1: 409 Conflict");
  EXPECT_TRUE(OkStatus().WithContext("x").ok());
}

TEST(StatusTest, CopyIsDeep) {
  Status a = InternalError("a");
  Status b = a;
  a = OkStatus();
  EXPECT_EQ(b.message(), "a");
  EXPECT_TRUE(a.ok());
}

Status FailIf(bool fail) { return fail ? UnavailableError("down") : OkStatus(); }
Status Chain(bool fail) {
  PHX_RETURN_IF_ERROR(FailIf(fail));
  return AlreadyExistsError("reached end");
}

TEST(StatusTest, ReturnIfErrorReturnsEarly) {
  EXPECT_EQ(Chain(true).code(), StatusCode::kUnavailable);
  EXPECT_EQ(Chain(false).code(), StatusCode::kAlreadyExists);
}

Result<int> Half(int x) {
  if (x % 2) return InvalidArgumentError("odd");
  return x / 2;
}
Result<int> Quarter(int x) {
  PHX_ASSIGN_OR_RETURN(int h, Half(x));
  PHX_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

TEST(ResultTest, HoldsValueOrStatus) {
  Result<int> r = Half(8);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 4);
  Result<int> e = Half(3);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(e.value_or(-1), -1);
}

TEST(ResultTest, AssignOrReturnPropagates) {
  EXPECT_EQ(*Quarter(8), 2);
  EXPECT_EQ(Quarter(6).status().message(), "odd");  // 6 -> 3 -> odd
}

TEST(ResultTest, MoveOnlyValues) {
  Result<std::unique_ptr<int>> r = std::make_unique<int>(7);
  ASSERT_TRUE(r.ok());
  std::unique_ptr<int> p = std::move(r).value();
  EXPECT_EQ(*p, 7);
}

TEST(IdsTest, DistinctTypesCompareByValue) {
  NodeName a("gpu-1"), b("gpu-1"), c("gpu-2");
  EXPECT_EQ(a, b);
  EXPECT_LT(a, c);
  EXPECT_EQ(std::hash<NodeName>()(a), std::hash<NodeName>()(b));
  static_assert(!std::is_convertible_v<NodeName, GpuUuid>);
}

TEST(BackoffTest, DeterministicDoublesUpToCap) {
  Backoff b({.base = std::chrono::milliseconds(100), .cap = std::chrono::milliseconds(1000),
             .floor = std::chrono::milliseconds(0), .jitter = false});
  EXPECT_EQ(b.Next().count(), 100);
  EXPECT_EQ(b.Next().count(), 200);
  EXPECT_EQ(b.Next().count(), 400);
  EXPECT_EQ(b.Next().count(), 800);
  EXPECT_EQ(b.Next().count(), 1000);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(b.Next().count(), 1000);  // no overflow
  b.Reset();
  EXPECT_EQ(b.Next().count(), 100);
}

TEST(BackoffTest, JitterStaysWithinCeilingAndFloor) {
  Backoff b({.base = std::chrono::milliseconds(100), .cap = std::chrono::milliseconds(800),
             .floor = std::chrono::milliseconds(10), .jitter = true},
            /*seed=*/42);
  for (int i = 0; i < 50; ++i) {
    auto d = b.Next().count();
    EXPECT_GE(d, 10);
    EXPECT_LE(d, 800);
  }
}

}  // namespace
}  // namespace phalanx
