// Ungated gangs behind kube-scheduler's unschedulable queue (extender/admission/gang_requeue.cc): once the
// gang can be placed, the active extender touches each member its filter refused, once per plan,
// so that kube-scheduler retries it (a pod update is what moves a pod out of v1.26's
// unschedulablePods when no cluster event comes).
#include <gtest/gtest.h>

#include <set>

#include "tests/unit/extender/test_cluster.h"

namespace phalanx::extender::testing {
namespace {

using namespace std::chrono_literals;

const std::vector<std::string> kNodes = {"dgx-0", "dgx-1"};

PodInfo Ungated(const std::string& gang, int index, int min_members) {
  PodInfo p = GangPod(gang, index, 8, min_members);
  p.gated = false;  // created without the webhook
  return p;
}

std::set<std::string> Requeued(TestCluster& c) {
  c.ext.DrainForTest();
  std::set<std::string> out;
  for (const auto& call : c.writer.CallsOf("requeue")) EXPECT_TRUE(out.insert(call.target).second) << call.target;
  return out;
}

TEST(GangRequeueTest, AMemberRefusedBeforeItsGangWasCompleteIsTouchedOnceThePlanExists) {
  TestCluster c;
  for (const auto& n : kNodes) ASSERT_TRUE(c.ext.OnNode(DgxNode(n)).ok());
  const PodInfo a = Ungated("llm", 0, 2), b = Ungated("llm", 1, 2);
  c.ext.OnPod(a);
  EXPECT_TRUE(c.ext.Filter(Args(a, kNodes)).passed.empty());  // "1 of 2 members exist": parked
  c.ext.Tick();
  EXPECT_TRUE(Requeued(c).empty()) << "nothing to retry while the gang is incomplete";
  c.ext.OnPod(b);
  EXPECT_EQ(c.ext.Filter(Args(b, kNodes)).passed.size(), 1u);  // b's filter plans the gang
  c.ext.Tick();
  EXPECT_EQ(Requeued(c), (std::set<std::string>{a.ns + "/" + a.name}));
  c.ext.Tick();
  c.ext.Tick();
  EXPECT_EQ(c.writer.CallsOf("requeue").size(), 1u) << "once per plan";
  EXPECT_EQ(c.ext.Filter(Args(a, kNodes)).passed.size(), 1u);  // the retried filter finds its slot
}

TEST(GangRequeueTest, MembersRefusedWhileTheCountSettledArePlannedOnTheTickAndTouched) {
  TestCluster c;
  for (const auto& n : kNodes) ASSERT_TRUE(c.ext.OnNode(DgxNode(n)).ok());
  const PodInfo a = Ungated("settle", 0, 0), b = Ungated("settle", 1, 0);
  c.ext.OnPod(a);
  c.ext.OnPod(b);
  EXPECT_TRUE(c.ext.Filter(Args(a, kNodes)).passed.empty());
  EXPECT_TRUE(c.ext.Filter(Args(b, kNodes)).passed.empty());
  c.ext.Tick();
  EXPECT_TRUE(Requeued(c).empty());
  c.clock.Advance(DefaultConfig().member_settle + 1s);
  c.ext.Tick();
  EXPECT_EQ(Requeued(c), (std::set<std::string>{a.ns + "/" + a.name, b.ns + "/" + b.name}));
  EXPECT_EQ(c.ext.stats().ungated_requeues.load(), 2u);
}

TEST(GangRequeueTest, AGangThatDoesNotFitIsNotTouchedAndGatedGangsAreLeftToTheEngine) {
  TestCluster c;
  ASSERT_TRUE(c.ext.OnNode(DgxNode("dgx-0")).ok());  // 8 GPUs for a 2x8 gang
  const PodInfo a = Ungated("big", 0, 2), b = Ungated("big", 1, 2);
  c.ext.OnPod(a);
  c.ext.OnPod(b);
  EXPECT_TRUE(c.ext.Filter(Args(a, {"dgx-0"})).passed.empty());
  for (int i = 0; i < 3; ++i) c.ext.Tick();
  EXPECT_TRUE(Requeued(c).empty()) << "a cluster event (capacity freed) wakes them, not us";
  const PodInfo g0 = GangPod("gated", 0, 8, 1);  // gated: the engine admits it and lifts the gate
  c.ext.OnPod(g0);
  c.ext.Tick();
  EXPECT_TRUE(Requeued(c).empty());
}

TEST(GangRequeueTest, AStandbyTouchesNothing) {
  TestCluster c(DefaultConfig(), /*leader=*/false);
  for (const auto& n : kNodes) ASSERT_TRUE(c.ext.OnNode(DgxNode(n)).ok());
  const PodInfo a = Ungated("llm", 0, 0), b = Ungated("llm", 1, 0);
  c.ext.OnPod(a);
  c.ext.OnPod(b);
  (void)c.ext.Filter(Args(a, kNodes));
  c.clock.Advance(DefaultConfig().member_settle + 1s);
  c.ext.Tick();
  EXPECT_TRUE(Requeued(c).empty());
}

}  // namespace
}  // namespace phalanx::extender::testing
