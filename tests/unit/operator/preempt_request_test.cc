// phalanx.io/preempt-request as the reconcile sees it: a malformed request is refused visibly
// (condition, Warning event, metric flag) once per new refusal, and never acted on.
#include <gtest/gtest.h>

#include "operator/api/keys.h"
#include "operator/api/time_format.h"
#include "tests/unit/operator/reconcile_world.h"

namespace phalanx::op {
namespace {

using std::chrono::seconds;
using testing::World;

const Condition* FindCondition(const TrainingJobStatus& st, std::string_view type) {
  for (const Condition& c : st.conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

World RunningJob() {
  World w(testing::ValidJobJson(2, 8));
  w.Settle();
  w.ScheduleAndRunAll();
  w.Step();
  return w;
}

TEST(PreemptRequestTest, AMalformedRequestIsRefusedVisiblyOnceAndNotActedOn) {
  World w = RunningJob();
  const std::string key(kAnnotationPreemptRequest);
  w.Annotate(key, R"({"requestId":"r1","deadline":"tomorrow"})");
  ReconcilePlan plan = w.Step();
  ASSERT_TRUE(plan.status);
  const Condition* c = FindCondition(*plan.status, kConditionPreemptRequestRefused);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->status, "True");
  EXPECT_EQ(c->reason, "InvalidAnnotation");
  EXPECT_NE(c->message.find("phalanx.io/preempt-request.deadline"), std::string::npos) << c->message;
  ASSERT_EQ(plan.events.size(), 1u);
  EXPECT_TRUE(plan.events[0].warning);
  EXPECT_EQ(plan.events[0].reason, "PreemptRequestRefused");
  EXPECT_EQ(plan.events[0].message, c->message);
  EXPECT_TRUE(plan.preempt_request_refused);
  EXPECT_FALSE(plan.status->preemption);
  EXPECT_TRUE(plan.annotate_pods.empty());
  EXPECT_TRUE(plan.delete_pods.empty());
  const std::string first_message = c->message;

  // The same annotation again: already recorded, nothing new (no event, no count, no write).
  plan = w.Step();
  EXPECT_TRUE(plan.empty());
  EXPECT_TRUE(plan.events.empty());
  EXPECT_FALSE(plan.preempt_request_refused);

  // Another malformed value is a new refusal.
  w.Annotate(key, "{not json");
  plan = w.Step();
  ASSERT_EQ(plan.events.size(), 1u);
  EXPECT_TRUE(plan.preempt_request_refused);
  ASSERT_TRUE(plan.status);
  EXPECT_NE(FindCondition(*plan.status, kConditionPreemptRequestRefused)->message, first_message);

  // The extender writes a valid request: acted on, and the condition clears.
  w.Annotate(key, R"({"requestId":"r2","deadline":")" + FormatRfc3339(w.now_ + seconds(120)) + R"("})");
  plan = w.Step();
  ASSERT_TRUE(plan.status && plan.status->preemption);
  EXPECT_EQ(plan.status->preemption->request_id, "r2");
  EXPECT_FALSE(plan.preempt_request_refused);
  c = FindCondition(*plan.status, kConditionPreemptRequestRefused);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->status, "False");
  EXPECT_EQ(c->reason, "Resolved");
  EXPECT_EQ(plan.annotate_pods.size(), 2u);
}

TEST(PreemptRequestTest, NoAnnotationAddsNoCondition) {
  World w = RunningJob();
  EXPECT_EQ(FindCondition(w.job_.status, kConditionPreemptRequestRefused), nullptr);
  EXPECT_TRUE(w.Step().empty());
}

}  // namespace
}  // namespace phalanx::op
