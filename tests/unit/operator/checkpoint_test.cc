#include "operator/lifecycle/checkpoint.h"

#include <gtest/gtest.h>

namespace phalanx::op {
namespace {

TEST(CheckpointTest, ParsesTheLastRecordLine) {
  auto r = ParseCheckpointReport("saving...\nTraceback? no\n{\"step\":1200,\"path\":\"/ckpt/1200\",\"committed\":true}\n");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->step, 1200);
  EXPECT_EQ(r->path, "/ckpt/1200");
  EXPECT_TRUE(r->committed);
}

TEST(CheckpointTest, RejectsNonRecords) {
  EXPECT_EQ(ParseCheckpointReport("Killed").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseCheckpointReport("{\"step\":-1,\"path\":\"p\"}").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseCheckpointReport("{\"path\":\"p\"}").status().code(), StatusCode::kInvalidArgument);
}

TEST(CheckpointTest, RecordOnlyMovesForward) {
  TrainingJobStatus st;
  st.consecutive_failures = 2;
  const SystemTime t0 = SystemTime(std::chrono::seconds(1000));
  EXPECT_TRUE(ApplyCheckpointReport(st, {100, "/c/100", true}, 1, t0));
  EXPECT_EQ(st.consecutive_failures, 0);  // progress resets the backoff
  EXPECT_FALSE(ApplyCheckpointReport(st, {50, "/c/50", true}, 1, t0));     // older
  EXPECT_FALSE(ApplyCheckpointReport(st, {100, "/c/100b", true}, 2, t0));  // equal
  EXPECT_FALSE(ApplyCheckpointReport(st, {200, "/c/200", false}, 2, t0));  // not committed
  EXPECT_FALSE(ApplyCheckpointReport(st, {300, "", true}, 2, t0));         // no path
  EXPECT_EQ(st.last_committed->step, 100);
  EXPECT_TRUE(ApplyCheckpointReport(st, {150, "/c/150", true}, 2, t0 + std::chrono::seconds(5)));
  EXPECT_EQ(st.last_committed->path, "/c/150");
  EXPECT_EQ(st.last_committed->attempt, 2);
}

}  // namespace
}  // namespace phalanx::op
