// QueueQuotas (extender/queues/queue_quotas.h) on its own, over an engine and a Ledger: the
// queue a gang runs in, and the quota check of gangs planned outside the engine, which count
// until the engine counts them or they hold nothing.
#include "extender/queues/queue_quotas.h"

#include <gtest/gtest.h>

#include "core/placement/gang_plan.h"
#include "tests/unit/extender/test_cluster.h"

namespace phalanx::extender::testing {
namespace {

constexpr scheduling::Milli G = scheduling::kMilliGpu;

// team-a and team-b, 8 H100 GPUs each, no borrowing; namespace "research" selects team-b.
QueueAssignment TwoTeams() {
  QueueAssignment a;
  a.config.queues = {
      {.name = "team-a", .cohort = "lab", .weight = 1, .parent = "", .quotas = {{"H100", 8 * G, 0, {}}}},
      {.name = "team-b", .cohort = "lab", .weight = 1, .parent = "", .quotas = {{"H100", 8 * G, 0, {}}}}};
  a.config.default_queue = "team-a";
  a.namespace_queue = {{"research", "team-b"}};
  return a;
}

class QueueQuotasTest : public ::testing::Test {
 protected:
  QueueQuotasTest() : ledger_(DefaultConfig().topology_levels) {
    for (const char* node : {"dgx-0", "dgx-1", "dgx-2"}) EXPECT_TRUE(ledger_.UpsertNode(DgxNode(node)).ok());
  }
  // A gang of one 8-GPU member in `ns`, labelled with `queue` unless it is empty.
  GangKey AddGang(const std::string& name, const std::string& ns, const std::string& queue) {
    PodInfo p = GangPod(name, 0, 8, 1);
    p.ns = ns;
    p.uid = PodUid("uid-" + ns + "-" + name);
    if (!queue.empty()) p.labels[std::string(kQueueLabel)] = queue;
    ledger_.UpsertPod(p, now_);
    return p.Gang();
  }
  const GangRecord& Gang(const GangKey& key) { return *ledger_.FindGang(key); }
  void Plan(const GangKey& key) {
    placement::GangSpec spec;
    spec.key = key;
    spec.members = 1;
    spec.gpus_per_member = 8;
    auto planned = placement::PlanGang(ledger_.state(), spec);
    ASSERT_TRUE(planned.ok() && planned->fits());
    ASSERT_TRUE(ledger_.AdmitPlan(key, std::move(*planned->plan), now_).ok());
  }

  MonotonicTime now_{};
  scheduling::Engine engine_;
  Ledger ledger_;
  QueueQuotas quotas_{engine_, ledger_};
};

TEST_F(QueueQuotasTest, AGangsQueueIsItsLabelElseItsNamespacesElseTheDefault) {
  ASSERT_TRUE(quotas_.Set(TwoTeams()).ok());
  EXPECT_TRUE(quotas_.On());
  EXPECT_EQ(quotas_.QueueOf(Gang(AddGang("labelled", "research", "team-a"))), "team-a");
  EXPECT_EQ(quotas_.QueueOf(Gang(AddGang("selected", "research", ""))), "team-b");
  EXPECT_EQ(quotas_.QueueOf(Gang(AddGang("plain", "ml", ""))), "");  // the default queue
}

TEST_F(QueueQuotasTest, QueuesThatDoNotValidateChangeNothing) {
  ASSERT_TRUE(quotas_.Set(TwoTeams()).ok());
  QueueAssignment bad = TwoTeams();
  bad.config.default_queue = "nobody";
  EXPECT_FALSE(quotas_.Set(bad).ok());
  EXPECT_TRUE(quotas_.On());
  EXPECT_EQ(quotas_.assignment(), TwoTeams());
}

TEST_F(QueueQuotasTest, AGangPlannedOutsideTheEngineCountsUntilItHoldsNothing) {
  ASSERT_TRUE(quotas_.Set(TwoTeams()).ok());
  const GangKey first = AddGang("first", "ml", "team-a");
  const GangKey second = AddGang("second", "ml", "team-a");
  const GangKey other = AddGang("other", "ml", "team-b");
  EXPECT_EQ(quotas_.QuotaRefusal(Gang(second), "H100", 1), "");
  Plan(first);
  quotas_.RecordUncounted(Gang(first), "H100", 1);
  // team-a's 8 GPUs are taken by a gang the engine has not counted yet.
  const std::string why = quotas_.QuotaRefusal(Gang(second), "H100", 1);
  EXPECT_NE(why.find("team-a"), std::string::npos) << why;
  EXPECT_EQ(quotas_.QuotaRefusal(Gang(other), "H100", 1), "");  // another queue's quota
  // The plan is dropped: it holds nothing, and counts no more.
  ledger_.DropPlan(first);
  EXPECT_EQ(quotas_.QuotaRefusal(Gang(second), "H100", 1), "");
}

TEST_F(QueueQuotasTest, WithoutQueuesNothingIsRefused) {
  const GangKey first = AddGang("first", "ml", "team-a");
  Plan(first);
  quotas_.RecordUncounted(Gang(first), "H100", 1);
  EXPECT_FALSE(quotas_.On());
  EXPECT_EQ(quotas_.QuotaRefusal(Gang(AddGang("second", "ml", "team-a")), "H100", 1), "");
}

}  // namespace
}  // namespace phalanx::extender::testing
