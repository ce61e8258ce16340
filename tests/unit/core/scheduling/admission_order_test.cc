// The admission order (core/scheduling/engine/admission_order.h) on its own: the walk's
// order with and without team queues, runs of gangs that cannot start skipped in one step
// with their reasons kept, and the GPUs waiting ahead of a gang.
#include "core/scheduling/engine/admission_order.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/unit/core/scheduling/engine_parts_builders.h"

namespace phalanx::scheduling {
namespace {

using testing::AddRunning;
using testing::AddWaiting;
using testing::ContextAt;
using testing::FakeDriver;
using testing::Gang;
using testing::kCritical;
using testing::kHigh;
using testing::kStandard;

constexpr Milli G = kMilliGpu;

class AdmissionOrderTest : public ::testing::Test {
 protected:
  explicit AdmissionOrderTest(QueueConfig queues = {}) : state_(EnginePolicy::Defaults(), std::move(queues)) {}

  // One pass's walk as Engine::Pass brackets it; the keys walked, in order.
  std::vector<std::string> Walk(PassContext& ctx, const std::function<void(WaitingGang&)>& also = nullptr) {
    ++state_.stats.passes;
    state_.pass_seq_limit = state_.next_seq;
    state_.in_pass = true;
    order_.BeginPass(ctx);
    std::vector<std::string> walked;
    order_.Walk(ctx, [&](WaitingGang& w) {
      walked.push_back(w.req.key.str());
      order_.MarkSeen(w);
      if (also) also(w);
    });
    state_.in_pass = false;
    order_.EndPass(ctx);
    return walked;
  }
  WaitingGang& Queue(GangRequest g) { return AddWaiting(state_, std::move(g), &order_); }

  EngineState state_;
  AdmissionOrder order_{state_};
  FakeDriver driver_;
};

TEST_F(AdmissionOrderTest, WalksByPriorityThenFirstSubmissionAndNotGangsQueuedDuringThePass) {
  testing::AddRack(driver_.mutable_state(), "n", 2, "r0");
  Queue(Gang("a", 1, 8, kStandard, 5));
  Queue(Gang("b", 1, 8, kHigh, 9));
  Queue(Gang("c", 1, 8, kStandard, 1));
  PassContext ctx = ContextAt(10, driver_, order_);
  const std::vector<std::string> walked = Walk(ctx, [&](WaitingGang& w) {
    if (w.req.key == GangKey("b")) Queue(Gang("d", 1, 8, kCritical, 10));
  });
  EXPECT_EQ(walked, (std::vector<std::string>{"b", "c", "a"}));
  EXPECT_FALSE(order_.HasUnindexed());  // d joined the order at the pass's end
  PassContext next = ContextAt(20, driver_, order_);
  EXPECT_EQ(Walk(next), (std::vector<std::string>{"d", "b", "c", "a"}));
}

TEST_F(AdmissionOrderTest, SkipsGangsThatCannotStartButCountsTheirGpusAndKeepsTheirReasons) {
  // No GPUs in H100 at all: standard gangs neither fit, nor become heads, nor preempt.
  for (int i = 0; i < 50; ++i) Queue(Gang(fmt::format("s{}", i), 1, 8, kStandard, i));
  Queue(Gang("high", 1, 8, kHigh, 100));  // its tier reserves: walked
  PassContext ctx = ContextAt(0, driver_, order_);
  EXPECT_EQ(Walk(ctx), (std::vector<std::string>{"high"}));
  EXPECT_EQ(ctx.ahead_all, 50 * 8);
  EXPECT_EQ(ctx.ahead_waiting["H100"], 50 * 8);
  const WaitingGang& s7 = *state_.waiting.at(GangKey("s7"));
  const std::optional<std::string> why = order_.SkippedReason(s7);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("does not fit now (8 GPUs, 0 free)"), std::string::npos) << *why;
}

TEST_F(AdmissionOrderTest, CountsTheGpusWaitingAheadAsTheyWereAtAChange) {
  WaitingGang& x = Queue(Gang("x", 1, 2, kStandard, 1));
  Queue(Gang("y", 1, 4, kStandard, 2));
  const WaitingGang& z = Queue(Gang("z", 1, 8, kStandard, 3));
  Queue(Gang("w", 1, 1, kStandard, 0, std::nullopt, false, "A100"));
  const std::string h100 = "H100";
  EXPECT_EQ(order_.WaitingGpusBefore(&h100, z.order, order_.change_seq()), 6);
  EXPECT_EQ(order_.WaitingGpusBefore(nullptr, z.order, order_.change_seq()), 7);
  const uint64_t before = order_.change_seq();
  order_.OnForgotten(x);
  EXPECT_EQ(order_.WaitingGpusBefore(&h100, z.order, before), 6);  // x's departure undone
  EXPECT_EQ(order_.WaitingGpusBefore(&h100, z.order, order_.change_seq()), 4);
  // Gangs queued during a pass are out of the sums until it ends.
  state_.in_pass = true;
  Queue(Gang("late", 1, 8, kStandard, 4));
  EXPECT_TRUE(order_.HasUnindexedIn("H100"));
  EXPECT_FALSE(order_.HasUnindexedIn("A100"));
}

// Two teams of 8 GPUs each in one cohort.
QueueConfig TwoTeams() {
  QueueConfig c;
  c.queues = {{.name = "team-a", .cohort = "org", .weight = 1, .parent = "", .quotas = {{"H100", 8 * G, {}, {}}}},
              {.name = "team-b", .cohort = "org", .weight = 1, .parent = "", .quotas = {{"H100", 8 * G, {}, {}}}}};
  c.default_queue = "team-a";
  EXPECT_TRUE(c.Validate().ok());
  return c;
}

class AdmissionOrderQueuesTest : public AdmissionOrderTest {
 protected:
  AdmissionOrderQueuesTest() : AdmissionOrderTest(TwoTeams()) {}
};

GangRequest Team(const std::string& key, const std::string& queue, int priority, double submitted) {
  GangRequest g = Gang(key, 1, 8, priority, submitted);
  g.queue = queue;
  return g;
}

TEST_F(AdmissionOrderQueuesTest, AQueueWithinItsNominalQuotaGoesFirstAndKeepsItsUnusedQuota) {
  testing::AddRack(driver_.mutable_state(), "n", 3, "r0");
  AddRunning(state_, driver_, Team("a-run", "team-a", kStandard, 0), {"n0"}, 0);  // team-a's nominal in use
  Queue(Team("a1", "team-a", kHigh, 1));      // first by priority, but it would borrow
  Queue(Team("b1", "team-b", kStandard, 5));  // within nominal
  PassContext ctx = ContextAt(10, driver_, order_);
  // b1 is walked first; a1 is not walked at all: team-b's waiting gang keeps its unused
  // quota from being lent this pass, so a1's queue has no room, and it is skipped with its
  // queue's reason.
  EXPECT_EQ(Walk(ctx), (std::vector<std::string>{"b1"}));
  const std::optional<std::string> why = order_.SkippedReason(*state_.waiting.at(GangKey("a1")));
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("team-a"), std::string::npos) << *why;
  // Without queues the same gangs are walked by priority.
  EngineState plain(EnginePolicy::Defaults(), {});
  AdmissionOrder order(plain);
  AddWaiting(plain, Team("a1", "team-a", kHigh, 1), &order);
  AddWaiting(plain, Team("b1", "team-b", kStandard, 5), &order);
  PassContext plain_ctx = ContextAt(10, driver_, order);
  ++plain.stats.passes;
  plain.pass_seq_limit = plain.next_seq;
  order.BeginPass(plain_ctx);
  std::vector<std::string> walked;
  order.Walk(plain_ctx, [&](WaitingGang& w) { walked.push_back(w.req.key.str()); });
  EXPECT_EQ(walked, (std::vector<std::string>{"a1", "b1"}));
}

}  // namespace
}  // namespace phalanx::scheduling
