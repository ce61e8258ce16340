// Admission is planned under the ledger's shared lock and each admission committed under
// the exclusive one (extender/admission/admission.cc). What changes in between must never be
// overwritten: the commit re-checks the admission and applies it whole or not at all; a
// gang whose admission no longer holds keeps waiting and is planned afresh.
#include <gtest/gtest.h>

#include "tests/unit/extender/test_cluster.h"

namespace phalanx::extender::testing {
namespace {

// Runs `change` once, between the next pass's planning and its commit.
void OnceBetweenPlanAndCommit(TestCluster& c, std::function<void()> change) {
  auto pending = std::make_shared<std::function<void()>>(std::move(change));
  c.ext.SetAdmissionHookForTest([pending] {
    if (*pending) std::exchange(*pending, nullptr)();
  });
}

int Planned(const Extender& ext) {
  int planned = 0;
  const json::Json state = ext.StateJson();
  for (const auto& gang : state["gangs"]) planned += gang.contains("plan") ? 1 : 0;
  return planned;
}

int ReservedGpus(const Extender& ext) {
  int reserved = 0;
  ext.ReadLedger([&](const Ledger& l) {
    for (placement::NodeIndex n : l.state().Nodes()) reserved += placement::GpuCount(l.state().node(n).reserved);
  });
  return reserved;
}

// One DGX (8 GPUs) and a gang of 2 x 4 GPUs: it needs the whole node.
struct WholeNodeGang {
  TestCluster c;
  std::vector<PodInfo> members;
  WholeNodeGang() {
    EXPECT_TRUE(c.ext.OnNode(DgxNode("dgx-0")).ok());
    for (int i = 0; i < 2; ++i) {
      members.push_back(GangPod("a", i, 4, 2, 1000));
      c.ext.OnPod(members.back());
    }
  }
};

TEST(AdmissionCommitTest, GpusTakenBetweenPlanAndCommitAreNeverReservedTwice) {
  WholeNodeGang g;
  const PodInfo intruder = GpuPod("intruder", 1, 0, "dgx-0");  // bound by kube-scheduler meanwhile
  OnceBetweenPlanAndCommit(g.c, [&] { g.c.ext.OnPod(intruder); });
  g.c.ext.Tick();
  g.c.ext.DrainForTest();
  EXPECT_EQ(g.c.ext.stats().admission_conflicts.load(), 1u);
  EXPECT_EQ(g.c.ext.stats().gangs_admitted.load(), 0u);
  EXPECT_EQ(Planned(g.c.ext), 0);
  EXPECT_EQ(ReservedGpus(g.c.ext), 0);  // nothing half-reserved
  EXPECT_TRUE(g.c.writer.CallsOf("ungate").empty());
  const std::string why = g.c.ext.Explain("default/a-0");
  EXPECT_NE(why.find("not admitted"), std::string::npos) << why;

  // The gang waits while the intruder runs, then is admitted.
  g.c.ext.Tick();
  EXPECT_EQ(g.c.ext.stats().gangs_admitted.load(), 0u);
  g.c.ext.OnPodDeleted(intruder.uid);
  g.c.ext.Tick();
  EXPECT_EQ(g.c.ext.stats().gangs_admitted.load(), 1u);
  EXPECT_EQ(ReservedGpus(g.c.ext), 8);
  g.c.ext.DrainForTest();
  EXPECT_EQ(g.c.writer.CallsOf("ungate").size(), 2u);
}

TEST(AdmissionCommitTest, AGangThatChangedMembersIsPlannedAgainWithTheNewCount) {
  TestCluster c;
  ASSERT_TRUE(c.ext.OnNode(DgxNode("dgx-0")).ok());
  ASSERT_TRUE(c.ext.OnNode(DgxNode("dgx-1")).ok());
  std::vector<PodInfo> members;
  for (int i = 0; i < 2; ++i) {
    members.push_back(GangPod("a", i, 4, 2, 1000));
    c.ext.OnPod(members.back());
  }
  OnceBetweenPlanAndCommit(c, [&] { c.ext.OnPod(GangPod("a", 2, 4, 2, 1000)); });  // a third member
  c.ext.Tick();
  EXPECT_EQ(c.ext.stats().admission_conflicts.load(), 1u);
  EXPECT_EQ(Planned(c.ext), 0);
  EXPECT_EQ(ReservedGpus(c.ext), 0);
  c.ext.Tick();
  EXPECT_EQ(c.ext.stats().gangs_admitted.load(), 1u);
  EXPECT_EQ(ReservedGpus(c.ext), 12);  // all three members
  c.ext.DrainForTest();
  EXPECT_EQ(c.writer.CallsOf("ungate").size(), 3u);
}

TEST(AdmissionCommitTest, ChangesThatDoNotTouchThePlanLetItCommit) {
  TestCluster c;
  ASSERT_TRUE(c.ext.OnNode(DgxNode("dgx-0")).ok());
  ASSERT_TRUE(c.ext.OnNode(DgxNode("dgx-1")).ok());
  for (int i = 0; i < 2; ++i) c.ext.OnPod(GangPod("a", i, 4, 2, 1000));
  // The gang fits on dgx-0 or dgx-1; meanwhile a node joins and a pod fills it.
  OnceBetweenPlanAndCommit(c, [&] {
    ASSERT_TRUE(c.ext.OnNode(DgxNode("dgx-2")).ok());
    c.ext.OnPod(GpuPod("elsewhere", 8, 0, "dgx-2"));
  });
  c.ext.Tick();
  EXPECT_EQ(c.ext.stats().admission_conflicts.load(), 0u);
  EXPECT_EQ(c.ext.stats().gangs_admitted.load(), 1u);
  EXPECT_EQ(ReservedGpus(c.ext), 8);
}

TEST(AdmissionCommitTest, APassGoesOnOverTheLedgerAsItIsAfterACommit) {
  TestCluster c;
  ASSERT_TRUE(c.ext.OnNode(DgxNode("dgx-0")).ok());
  ASSERT_TRUE(c.ext.OnNode(DgxNode("dgx-1")).ok());
  for (int i = 0; i < 2; ++i) c.ext.OnPod(GangPod("a", i, 4, 2, 1000));
  c.clock.Advance(std::chrono::seconds(1));
  for (int i = 0; i < 2; ++i) c.ext.OnPod(GangPod("b", i, 4, 2, 1000));
  // Before the first admission commits, a pod takes a GPU on dgx-1. If a was planned
  // there, its commit is refused and b (planned next, on the ledger as it is now) gets
  // dgx-0; if a was planned on dgx-0, b no longer fits. Either way: one gang, whole.
  OnceBetweenPlanAndCommit(c, [&] { c.ext.OnPod(GpuPod("intruder", 1, 0, "dgx-1")); });
  c.ext.Tick();
  EXPECT_LE(c.ext.stats().admission_conflicts.load(), 1u);
  EXPECT_EQ(c.ext.stats().gangs_admitted.load(), 1u);
  EXPECT_EQ(Planned(c.ext), 1) << json::Dump(c.ext.StateJson()["gangs"]);
  EXPECT_EQ(ReservedGpus(c.ext), 8);  // the one that still held, whole
}

}  // namespace
}  // namespace phalanx::extender::testing
