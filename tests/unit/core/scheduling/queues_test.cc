// GPU queues (core/scheduling/queues.h): strict parsing, validation naming the field, and
// each accounting rule — within nominal, borrowing within cohort and limits, lending
// limits, one level of hierarchy, shares, borrowing gangs and reclaim candidates.
#include "core/scheduling/queues.h"

#include <gtest/gtest.h>

namespace phalanx::scheduling {
namespace {

constexpr Milli G = kMilliGpu;

Result<QueueConfig> Parse(const std::string& yaml) { return ParseQueueConfigFrom(YAML::Load(yaml)); }

QueueConfig TwoTeams(std::optional<Milli> borrowing = std::nullopt, std::optional<Milli> lending = std::nullopt) {
  QueueConfig c;
  c.queues = {{.name = "team-a", .cohort = "org", .weight = 1, .parent = "", .quotas = {{"H100", 8 * G, borrowing, lending}}},
              {.name = "team-b", .cohort = "org", .weight = 1, .parent = "", .quotas = {{"H100", 8 * G, borrowing, lending}}}};
  c.default_queue = "team-a";
  EXPECT_TRUE(c.Validate().ok()) << c.Validate();
  return c;
}

TEST(QueueConfigTest, ParsesQueuesInGpus) {
  auto c = Parse(R"(
queues:
  - name: team-a
    cohort: org
    weight: 2
    quotas:
      - {pool: H100, nominal: 8, borrowingLimit: 4, lendingLimit: 2.5}
  - name: team-b
    cohort: org
    quotas: [{pool: H100, nominal: 0.5}]
defaultQueue: team-b
crossQueuePreemptionPriority: -1
)");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->queues.size(), 2u);
  EXPECT_EQ(c->queues[0].weight, 2);
  EXPECT_EQ(c->queues[0].quotas[0].nominal, 8000);
  EXPECT_EQ(*c->queues[0].quotas[0].borrowing_limit, 4000);
  EXPECT_EQ(*c->queues[0].quotas[0].lending_limit, 2500);
  EXPECT_EQ(c->queues[1].quotas[0].nominal, 500);
  EXPECT_FALSE(c->queues[1].quotas[0].borrowing_limit.has_value());
  EXPECT_EQ(c->default_queue, "team-b");
  EXPECT_EQ(c->cross_queue_preemption_priority, -1);
}

TEST(QueueConfigTest, ErrorsNameTheField) {
  const std::pair<std::string, std::string> cases[] = {
      {"queues: [{name: a, quotas: [{pool: H100, nominal: 1, borrowLimit: 2}]}]\ndefaultQueue: a",
       "queues[0].quotas[0].borrowLimit: unknown key"},
      {"queues: [{name: a, quotas: [{pool: H100}]}]\ndefaultQueue: a", "queues[0].quotas[0].nominal: required"},
      {"queues: [{name: a, quotas: [{pool: H100, nominal: -1}]}]\ndefaultQueue: a", "queues[0].quotas[0].nominal: must be"},
      {"queues: [{name: a, quotas: [{pool: H100, nominal: 0.0001}]}]\ndefaultQueue: a", "queues[0].quotas[0].nominal: at most 3 decimals"},
      {"queues: [{name: a, quotas: [{pool: H100, nominal: x}]}]\ndefaultQueue: a", "queues[0].quotas[0].nominal: expected a number"},
      {"queues: [{name: a, quotas: [{pool: H100, nominal: 4, lendingLimit: 5}]}]\ndefaultQueue: a",
       "queues[0].quotas[0].lendingLimit: must be between 0 and nominal"},
      {"queues: [{name: a, quotas: [{pool: H100, nominal: 1}, {pool: H100, nominal: 1}]}]\ndefaultQueue: a",
       "queues[0].quotas[1].pool: duplicate"},
      {"queues: [{name: Team_A}]\ndefaultQueue: Team_A", "queues[0].name: \"Team_A\" must be a DNS label"},
      {"queues: [{name: a}, {name: a}]\ndefaultQueue: a", "queues[1].name: duplicate"},
      {"queues: [{name: a, weight: 0}]\ndefaultQueue: a", "queues[0].weight: must be > 0"},
      {"queues: [{name: a, parent: p}]\ndefaultQueue: a", "queues[0].parent: no queue \"p\""},
      {"queues: [{name: p, parent: q}, {name: q}, {name: a, parent: p}]\ndefaultQueue: a",
       "queues[2].parent: \"p\" has a parent itself"},
      {"queues: [{name: p}, {name: a, parent: p, cohort: x}]\ndefaultQueue: a", "queues[1].cohort: a child queue"},
      {"queues: [{name: p, quotas: [{pool: H100, nominal: 8}]}, {name: a, parent: p, quotas: [{pool: H100, nominal: 6}]},"
       " {name: b, parent: p, quotas: [{pool: H100, nominal: 4}]}]\ndefaultQueue: a",
       "queues[0].quotas: the children's nominal quotas of H100 (10 GPUs) exceed the parent's (8 GPUs)"},
      {"queues: [{name: a}]\ndefaultQueue: b", "defaultQueue: \"b\" is not one of the queues"},
      {"queues: [{name: a}]", "defaultQueue: \"\" is not one of the queues"},
      {"queues: [{name: p}, {name: a, parent: p}]\ndefaultQueue: p", "defaultQueue: \"p\" is a parent queue"},
      {"queues: {name: a}\ndefaultQueue: a", "queues: expected a list of queues"},
  };
  for (const auto& [yaml, want] : cases) {
    auto c = Parse(yaml);
    ASSERT_FALSE(c.ok()) << yaml;
    EXPECT_NE(c.status().message().find(want), std::string::npos) << yaml << "\n  got: " << c.status().message();
  }
}

TEST(QueueConfigTest, NoQueuesIsDisabled) {
  auto c = Parse("other: 1");
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->enabled());
  EXPECT_FALSE(QueueLedger(*c).enabled());
}

TEST(QueueConfigTest, MigProfilesCountInSevenths) {
  EXPECT_EQ(MigProfileMilli("1g.10gb"), 142);
  EXPECT_EQ(MigProfileMilli("3g.40gb"), 428);
  EXPECT_EQ(MigProfileMilli("7g.80gb"), 1000);
  EXPECT_EQ(MigProfileMilli("8g.80gb"), 0);
  EXPECT_EQ(MigProfileMilli("gpu"), 0);
}

TEST(QueueLedgerTest, ResolvesUnknownAndParentQueuesToTheDefault) {
  QueueConfig c = TwoTeams();
  c.queues.push_back({.name = "org-x", .cohort = "", .weight = 1, .parent = "", .quotas = {{"H100", 4 * G, {}, {}}}});
  c.queues.push_back({.name = "x-1", .cohort = "", .weight = 1, .parent = "org-x", .quotas = {}});
  ASSERT_TRUE(c.Validate().ok());
  QueueLedger l(c);
  EXPECT_EQ(l.Resolve("team-b"), "team-b");
  EXPECT_EQ(l.Resolve(""), "team-a");
  EXPECT_EQ(l.Resolve("nobody"), "team-a");
  EXPECT_EQ(l.Resolve("org-x"), "team-a");
  EXPECT_EQ(l.Resolve("x-1"), "x-1");
}

TEST(QueueLedgerTest, WithinNominalThenBorrowsWhatTheCohortDoesNotUse) {
  QueueLedger l(TwoTeams());
  EXPECT_EQ(l.Check("team-a", "H100", 8 * G), QueueLedger::Fit::kWithinNominal);
  l.Add(GangKey("a1"), "team-a", "H100", 8 * G, 1000, 0);
  EXPECT_EQ(l.Check("team-a", "H100", 8 * G), QueueLedger::Fit::kBorrowing);
  EXPECT_EQ(l.Check("team-a", "H100", 9 * G), QueueLedger::Fit::kNoRoom);
  l.Add(GangKey("a2"), "team-a", "H100", 6 * G, 1000, 10);
  const QueuePoolUsage a = l.UsageOf("team-a", "H100");
  EXPECT_EQ(a.usage, 14 * G);
  EXPECT_EQ(a.borrowed, 6 * G);
  EXPECT_EQ(l.UsageOf("team-b", "H100").lent, 6 * G);
  EXPECT_EQ(l.Room("team-a", "H100"), 2 * G);
  // team-b's own nominal stays its own: it may run all 8 (the borrowed 6 are reclaimable).
  EXPECT_EQ(l.Check("team-b", "H100", 8 * G), QueueLedger::Fit::kWithinNominal);
  EXPECT_EQ(l.Borrowing(), std::vector<GangKey>{GangKey("a2")});
  EXPECT_TRUE(l.IsBorrowing(GangKey("a2")));
  EXPECT_FALSE(l.IsBorrowing(GangKey("a1")));
  EXPECT_EQ(l.ReclaimCandidates("team-b", "H100"), std::vector<GangKey>{GangKey("a2")});
  EXPECT_TRUE(l.ReclaimCandidates("team-a", "H100").empty());  // never its own queue's
  // Once a1 ends, a2 runs within nominal: no longer a reclaim candidate.
  l.Remove(GangKey("a1"));
  EXPECT_TRUE(l.Borrowing().empty());
  EXPECT_EQ(l.UsageOf("team-b", "H100").lent, 0);
}

TEST(QueueLedgerTest, WaitingWorkKeepsItsQueuesUnusedQuotaFromBeingLent) {
  QueueLedger l(TwoTeams());
  l.Add(GangKey("a1"), "team-a", "H100", 8 * G, 1000, 0);
  EXPECT_EQ(l.Room("team-a", "H100"), 8 * G);
  l.SetPending({{{"team-b", "H100"}, 3 * G}});
  EXPECT_EQ(l.Room("team-a", "H100"), 5 * G);
  EXPECT_EQ(l.Room("team-b", "H100"), 8 * G);  // its own waiting work is not kept from itself
  l.SetPending({{{"team-b", "H100"}, 20 * G}});  // at most its unused lendable quota
  EXPECT_EQ(l.Room("team-a", "H100"), 0);
  l.SetPending({});
  EXPECT_EQ(l.Room("team-a", "H100"), 8 * G);
}

TEST(QueueLedgerTest, BorrowingLimitCapsBorrowing) {
  QueueLedger l(TwoTeams(/*borrowing=*/3 * G));
  l.Add(GangKey("a1"), "team-a", "H100", 8 * G, 1000, 0);
  EXPECT_EQ(l.Check("team-a", "H100", 3 * G), QueueLedger::Fit::kBorrowing);
  EXPECT_EQ(l.Check("team-a", "H100", 4 * G), QueueLedger::Fit::kNoRoom);
  EXPECT_NE(l.Explain("team-a", "H100", 4 * G).find("may borrow at most 3 beyond it"), std::string::npos);
}

TEST(QueueLedgerTest, LendingLimitKeepsPartOfTheNominalForItsQueue) {
  QueueLedger l(TwoTeams(std::nullopt, /*lending=*/2 * G));
  l.Add(GangKey("a1"), "team-a", "H100", 8 * G, 1000, 0);
  // team-b lends at most 2 of its 8 (team-a's own lendable 2 are in use by itself).
  EXPECT_EQ(l.Room("team-a", "H100"), 2 * G);
  EXPECT_EQ(l.Check("team-a", "H100", 3 * G), QueueLedger::Fit::kNoRoom);
  l.Add(GangKey("a2"), "team-a", "H100", 2 * G, 1000, 1);
  EXPECT_EQ(l.Check("team-a", "H100", 1), QueueLedger::Fit::kNoRoom);
  EXPECT_EQ(l.Explain("team-a", "H100", 1000), "queue team-a is at 10/8 nominal GPUs of H100 and its cohort org has none to lend");
}

TEST(QueueLedgerTest, NoCohortMeansNoBorrowing) {
  QueueConfig c = TwoTeams();
  c.queues[0].cohort = "";
  QueueLedger l(c);
  l.Add(GangKey("a1"), "team-a", "H100", 8 * G, 1000, 0);
  EXPECT_EQ(l.Check("team-a", "H100", 1), QueueLedger::Fit::kNoRoom);
  EXPECT_EQ(l.Explain("team-a", "H100", 1), "queue team-a is at 8/8 nominal GPUs of H100 and has no cohort to borrow from");
  // team-b's cohort has only team-b in it now.
  l.Add(GangKey("b1"), "team-b", "H100", 8 * G, 1000, 0);
  EXPECT_EQ(l.Check("team-b", "H100", 1), QueueLedger::Fit::kNoRoom);
}

TEST(QueueLedgerTest, PoolsWithoutAnyQuotaAreNotManaged) {
  QueueLedger l(TwoTeams());
  EXPECT_EQ(l.Check("team-a", "L40S", 100 * G), QueueLedger::Fit::kWithinNominal);
  // ... but a pool someone has quota in is: no quota there means borrowing only.
  l.Add(GangKey("b1"), "team-b", "H100", 8 * G, 1000, 0);
  EXPECT_EQ(l.Check("team-a", "H100", 8 * G), QueueLedger::Fit::kWithinNominal);
}

TEST(QueueLedgerTest, ExplainSaysTheCohortHasNoneToLend) {
  QueueConfig c = TwoTeams();
  c.queues[0].quotas[0].nominal = 512 * G;
  c.queues[1].quotas[0].nominal = 512 * G;
  QueueLedger l(c);
  l.Add(GangKey("a"), "team-a", "H100", 512 * G, 1000, 0);
  l.Add(GangKey("b"), "team-b", "H100", 512 * G, 1000, 0);
  EXPECT_EQ(l.Check("team-a", "H100", 8 * G), QueueLedger::Fit::kNoRoom);
  EXPECT_EQ(l.Explain("team-a", "H100", 8 * G),
            "queue team-a is at 512/512 nominal GPUs of H100 and its cohort org has none to lend");
  l.Remove(GangKey("b"));
  l.Add(GangKey("b"), "team-b", "H100", 508 * G, 1000, 0);
  EXPECT_EQ(l.Explain("team-a", "H100", 8 * G),
            "queue team-a is at 512/512 nominal GPUs of H100 and its cohort org has 4 to lend; this gang needs 8");
}

TEST(QueueLedgerTest, ChildrenShareTheirParentsQuotaAndItsBorrowing) {
  QueueConfig c;
  c.queues = {{.name = "org-x", .cohort = "all", .weight = 1, .parent = "", .quotas = {{"H100", 16 * G, {}, {}}}},
              {.name = "org-y", .cohort = "all", .weight = 1, .parent = "", .quotas = {{"H100", 16 * G, {}, {}}}},
              {.name = "x-1", .cohort = "", .weight = 1, .parent = "org-x", .quotas = {{"H100", 8 * G, {}, {}}}},
              {.name = "x-2", .cohort = "", .weight = 1, .parent = "org-x", .quotas = {{"H100", 4 * G, {}, {}}}},
              {.name = "y-1", .cohort = "", .weight = 1, .parent = "org-y", .quotas = {{"H100", 16 * G, {}, {}}}}};
  c.default_queue = "x-1";
  ASSERT_TRUE(c.Validate().ok()) << c.Validate();
  QueueLedger l(c);
  // x-1 may use its 8, x-2's unused 4, org-x's unassigned 4 and org-y's unused 16.
  EXPECT_EQ(l.Room("x-1", "H100"), 32 * G);
  l.Add(GangKey("y"), "y-1", "H100", 12 * G, 1000, 0);
  EXPECT_EQ(l.Room("x-1", "H100"), 20 * G);
  l.Add(GangKey("x1"), "x-1", "H100", 18 * G, 1000, 1);
  EXPECT_EQ(l.Usage("org-x", "H100"), 18 * G);
  EXPECT_EQ(l.Room("x-1", "H100"), 2 * G);
  // x-2 is within its nominal 4: guaranteed, even though the cohort is full.
  EXPECT_EQ(l.Check("x-2", "H100", 4 * G), QueueLedger::Fit::kWithinNominal);
  EXPECT_EQ(l.Check("y-1", "H100", 4 * G), QueueLedger::Fit::kWithinNominal);
  EXPECT_TRUE(l.SameGroup("x-2", "x-1"));
  EXPECT_TRUE(l.SameGroup("y-1", "x-1"));
  EXPECT_EQ(l.ReclaimCandidates("y-1", "H100"), std::vector<GangKey>{GangKey("x1")});
}

TEST(QueueLedgerTest, BorrowersAreTheLowestPriorityLatestStarted) {
  QueueLedger l(TwoTeams());
  l.Add(GangKey("old"), "team-a", "H100", 4 * G, 1000, 0);
  l.Add(GangKey("new"), "team-a", "H100", 4 * G, 1000, 50);
  l.Add(GangKey("spot"), "team-a", "H100", 4 * G, 100, 10);
  l.Add(GangKey("newest"), "team-a", "H100", 2 * G, 1000, 60);
  // 14 used, 8 nominal: spot (lowest tier) first, then newest; 8 left = nominal.
  EXPECT_EQ(l.Borrowing("team-a", "H100"), (std::vector<GangKey>{GangKey("spot"), GangKey("newest")}));
}

TEST(QueueLedgerTest, WeightedDominantShare) {
  QueueConfig c = TwoTeams();
  c.queues[1].weight = 2;
  c.queues[1].quotas.push_back({"A100", 4 * G, {}, {}});
  QueueLedger l(c);
  l.SetCapacity("H100", 16 * G);
  l.SetCapacity("A100", 4 * G);
  l.Add(GangKey("a"), "team-a", "H100", 8 * G, 1000, 0);
  l.Add(GangKey("b1"), "team-b", "H100", 2 * G, 1000, 0);
  l.Add(GangKey("b2"), "team-b", "A100", 3 * G, 1000, 0);
  EXPECT_DOUBLE_EQ(l.Share("team-a"), 0.5);
  EXPECT_DOUBLE_EQ(l.Share("team-b"), 0.75 / 2);  // dominant: A100
  EXPECT_TRUE(l.BelowNominal("team-b", "H100"));
  EXPECT_FALSE(l.BelowNominal("team-a", "H100"));
  EXPECT_TRUE(l.BelowNominal("team-b", ""));
}

TEST(QueueLedgerTest, InvalidConfigLeavesQueuesOff) {
  QueueConfig c = TwoTeams();
  c.default_queue = "nobody";
  EXPECT_FALSE(QueueLedger(c).enabled());
}

// The engine checks quotas by index (names resolved once per gang): every index answer
// must be the answer by name.
TEST(QueueLedgerTest, IndexesAnswerAsNames) {
  QueueConfig c = TwoTeams();
  c.queues.push_back({.name = "org-x", .cohort = "org", .weight = 2, .parent = "",
                      .quotas = {{"H100", 6 * G, {}, {}}, {"A100", 2 * G, {}, {}}}});
  c.queues.push_back({.name = "x-1", .cohort = "", .weight = 1, .parent = "org-x",
                      .quotas = {{"H100", 4 * G, {}, {}}, {"A100", 2 * G, {}, {}}}});
  ASSERT_TRUE(c.Validate().ok()) << c.Validate();
  QueueLedger l(c);
  l.SetCapacity("H100", 32 * G);
  l.SetCapacity("L4", 8 * G);  // known to the ledger, no quota: not managed
  const int a = l.QueueIndex("team-a"), x1 = l.QueueIndex("x-1"), h100 = l.PoolIndex("H100");
  ASSERT_GE(a, 0);
  ASSERT_GE(h100, 0);
  EXPECT_EQ(l.QueueIndex("nobody"), -1);
  EXPECT_EQ(l.PoolIndex("TPU"), -1);
  EXPECT_EQ(l.QueueName(x1), "x-1");
  EXPECT_EQ(l.ResolveIndex("x-1"), x1);
  EXPECT_EQ(l.ResolveIndex("org-x"), a);  // a parent takes no work: the default queue
  EXPECT_EQ(l.ResolveIndex("nobody"), a);
  l.Add(GangKey("a1"), "team-a", "H100", 10 * G, 1000, 0);
  l.Add(GangKey("x1"), "x-1", "H100", 3 * G, 1000, 1);
  l.Add(GangKey("x2"), "x-1", "A100", 2 * G, 1000, 2);
  l.SetPendingByIndex({{l.QueueIndex("team-b"), h100, 5 * G}});
  for (const std::string queue : {"team-a", "team-b", "org-x", "x-1", "nobody"}) {
    const int q = l.QueueIndex(queue);
    EXPECT_DOUBLE_EQ(l.Share(q), l.Share(queue)) << queue;
    for (const Milli amount : {Milli{1}, 2 * G, 5 * G, 9 * G, 40 * G}) {
      EXPECT_EQ(l.WithinNominalOfAnyPool(q, amount), l.WithinNominal(queue, "", amount)) << queue << " " << amount;
      for (const std::string pool : {"H100", "A100", "L4", "TPU"}) {
        EXPECT_EQ(l.Check(q, l.PoolIndex(pool), amount), l.Check(queue, pool, amount)) << queue << " " << pool;
        EXPECT_EQ(l.Nominal(q, l.PoolIndex(pool)), l.Nominal(queue, pool)) << queue << " " << pool;
      }
    }
  }
}

TEST(QueueLedgerTest, PendingByIndexIsPendingByName) {
  QueueLedger by_name(TwoTeams()), by_index(TwoTeams());
  for (QueueLedger* l : {&by_name, &by_index}) l->Add(GangKey("a1"), "team-a", "H100", 8 * G, 1000, 0);
  by_name.SetPending({{{"team-b", "H100"}, 3 * G}, {{"team-a", "TPU"}, 3 * G}});
  by_index.SetPendingByIndex({{by_index.QueueIndex("team-b"), by_index.PoolIndex("H100"), 3 * G},
                              {by_index.QueueIndex("team-a"), by_index.PoolIndex("TPU"), 3 * G}});
  EXPECT_EQ(by_index.Room("team-a", "H100"), 5 * G);
  EXPECT_EQ(by_index.Room("team-a", "H100"), by_name.Room("team-a", "H100"));
  by_index.SetPendingByIndex({});
  EXPECT_EQ(by_index.Room("team-a", "H100"), 8 * G);
}

// Reclaim candidates are kept per (queue, pool) between ledger changes: every Add and
// Remove must drop them.
TEST(QueueLedgerTest, CachedReclaimCandidatesFollowAddAndRemove) {
  QueueLedger l(TwoTeams());
  const int b = l.QueueIndex("team-b"), a = l.QueueIndex("team-a");
  l.Add(GangKey("a1"), "team-a", "H100", 8 * G, 1000, 0);
  const int h100 = l.PoolIndex("H100");
  EXPECT_TRUE(l.ReclaimCandidates(b, h100).empty());
  l.Add(GangKey("a2"), "team-a", "H100", 4 * G, 1000, 10);
  EXPECT_EQ(l.ReclaimCandidates(b, h100), std::vector<GangKey>{GangKey("a2")});
  EXPECT_EQ(l.ReclaimCandidates(b, h100), l.ReclaimCandidates("team-b", "H100"));  // kept, same answer
  EXPECT_TRUE(l.ReclaimCandidates(a, h100).empty());
  l.Add(GangKey("a3"), "team-a", "H100", 2 * G, 1000, 20);
  EXPECT_EQ(l.ReclaimCandidates(b, h100), (std::vector<GangKey>{GangKey("a3"), GangKey("a2")}));
  l.Remove(GangKey("a1"));  // a2 and a3 now run within team-a's nominal
  EXPECT_TRUE(l.ReclaimCandidates(b, h100).empty());
  EXPECT_TRUE(l.ReclaimCandidates(b, -1).empty());
  EXPECT_TRUE(l.ReclaimCandidates(-1, h100).empty());
}

}  // namespace
}  // namespace phalanx::scheduling
