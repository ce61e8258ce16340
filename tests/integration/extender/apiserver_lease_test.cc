// One active extender (docs/architecture.md §2.5) and API-server outages: two replicas share the Lease
// phalanx-extender — only the holder binds and is ready; when it dies the other takes over.
// An unreachable API server leaves the verbs answering and the ledger unchanged; a leader
// that cannot renew its Lease exits non-zero.
#include "tests/integration/extender/apiserver_harness.h"

namespace phalanx::extender::itest {
namespace {

const std::vector<std::string> kFastLease = {"--leader-elect-lease-duration", "3s", "--leader-elect-renew-deadline",
                                             "2s", "--leader-elect-retry-period", "500ms"};

struct LeaseFixture : ::testing::Test {
  Cluster cluster;
  std::vector<std::unique_ptr<ExtenderProcess>> exts;

  void SetUp() override {
    cluster.Start(::testing::UnitTest::GetInstance()->current_test_info()->name());
    for (const char* n : {"dgx-1", "dgx-2"}) cluster.Seed(DgxNode(n));
  }
  void TearDown() override {
    if (!HasFailure()) return;
    for (auto& e : exts) std::cerr << "--- extender log ---\n" << e->Log() << "\n";
  }
  ExtenderProcess& Spawn(const std::string& name, std::vector<std::string> extra) {
    exts.push_back(std::make_unique<ExtenderProcess>(name, cluster.kubeconfig, std::move(extra)));
    return *exts.back();
  }
  std::string Holder() {
    auto lease = cluster.server->Get("leases.coordination.k8s.io", "phalanx-system", "phalanx-extender");
    return lease.ok() ? (*lease)["spec"].value("holderIdentity", "") : "";
  }
};

TEST_F(LeaseFixture, OnlyTheLeaderBindsAndTheStandbyTakesOverWhenItDies) {
  auto& a = Spawn("lease-a", kFastLease);
  ASSERT_TRUE(a.WaitReady()) << a.Log();
  auto& b = Spawn("lease-b", kFastLease);
  // b is synced (it answers filter from its warm ledger) but not the active one: not ready.
  cluster.Seed(Pod({.name = "p1", .gpus = 1, .priority = 1000}));
  const Json p1 = cluster.Get("ml", "p1");
  ASSERT_TRUE(WaitUntil([&] {
    return Passed(b.Post("filter", FilterBody(p1, {"dgx-1", "dgx-2"}))).size() == 2;
  })) << b.Log();
  EXPECT_FALSE(b.Ready());
  EXPECT_EQ(b.Metric("phalanx_extender_leader"), 0);
  EXPECT_EQ(a.Metric("phalanx_extender_leader"), 1);
  const std::string err = BindError(b.Post("bind", BindBody(p1, "dgx-1")));
  EXPECT_NE(err.find("not the active one"), std::string::npos) << err;
  EXPECT_FALSE(IsBound(cluster.Get("ml", "p1")));
  EXPECT_EQ(BindError(a.Post("bind", BindBody(p1, "dgx-1"))), "");
  EXPECT_EQ(cluster.Get("ml", "p1")["spec"]["nodeName"], "dgx-1");
  EXPECT_TRUE(HasDevices(cluster.Get("ml", "p1")));
  const std::string holder_a = Holder();

  // The leader dies without releasing the Lease: b takes it once it expires.
  a.Signal(SIGKILL);
  a.Wait();
  ASSERT_TRUE(b.WaitReady()) << b.Log();
  EXPECT_NE(Holder(), holder_a);
  cluster.Seed(Pod({.name = "p2", .gpus = 1, .priority = 1000}));
  const Json p2 = cluster.Get("ml", "p2");
  ASSERT_TRUE(WaitUntil([&] { return BindError(b.Post("bind", BindBody(p2, "dgx-1"))).empty(); })) << b.Log();
  EXPECT_EQ(cluster.Get("ml", "p2")["spec"]["nodeName"], "dgx-1");
  // b's ledger holds both pods' GPUs on dgx-1 (p1's from the informer, p2's from its own bind).
  EXPECT_TRUE(WaitUntil([&] { return b.State()["cluster"]["freeGpus"] == 14; })) << b.State().dump();
}

TEST_F(LeaseFixture, ALeaderStoppedWithSigtermReleasesTheLeaseAndTheStandbyTakesOverAtOnce) {
  // A 60 s lease: without the release the standby would wait a minute.
  const std::vector<std::string> slow = {"--leader-elect-lease-duration", "60s", "--leader-elect-renew-deadline", "40s",
                                         "--leader-elect-retry-period", "500ms"};
  auto& a = Spawn("release-a", slow);
  ASSERT_TRUE(a.WaitReady()) << a.Log();
  auto& b = Spawn("release-b", slow);
  ASSERT_TRUE(WaitUntil([&] { return b.Metric("phalanx_extender_leader") == 0; })) << b.Log();
  a.Signal(SIGTERM);
  EXPECT_EQ(a.Wait(), 0);
  EXPECT_TRUE(b.WaitReady(std::chrono::seconds(30))) << b.Log();
}

TEST_F(LeaseFixture, AnApiServerOutageLeavesVerbsAnsweringAndTheLedgerUnchanged) {
  // Renewal outlasts the outage: this is about the verbs, not about losing the Lease.
  auto& e = Spawn("outage", {"--leader-elect-lease-duration", "60s", "--leader-elect-renew-deadline", "40s",
                             "--leader-elect-retry-period", "1s"});
  cluster.Seed(Pod({.name = "bound", .gpus = 4, .priority = 1000, .node = "dgx-1"}));
  cluster.Seed(Pod({.name = "p", .gpus = 2, .priority = 1000}));
  ASSERT_TRUE(e.WaitReady()) << e.Log();
  ASSERT_TRUE(WaitUntil([&] { return e.State()["cluster"]["freeGpus"] == 12; })) << e.State().dump();
  const Json p = cluster.Get("ml", "p");
  const Json before = e.State();

  // Every request fails as from an overloaded or unreachable API server. (GoDown() cannot be
  // used here: the fake keeps its port bound while clients hold connections.)
  cluster.server->FailNext({.verb = "*", .code = 503, .count = 1 << 30, .message = "outage"});
  auto filter = e.Post("filter", FilterBody(p, {"dgx-1", "dgx-2"}));
  EXPECT_EQ(filter.status, 200) << filter.body;
  EXPECT_EQ(Passed(filter).size(), 2u);
  EXPECT_EQ(e.Post("prioritize", FilterBody(p, {"dgx-1", "dgx-2"})).status, 200);
  const std::string err = BindError(e.Post("bind", BindBody(p, "dgx-2")));
  EXPECT_FALSE(err.empty());  // the Binding could not be written
  EXPECT_NE(err, "<no reply>");
  EXPECT_EQ(e.State(), before) << "a failed bind must leave no assumption behind";
  EXPECT_FALSE(e.Exited());

  cluster.server->ClearFaults();
  EXPECT_TRUE(WaitUntil([&] { return BindError(e.Post("bind", BindBody(p, "dgx-2"))).empty(); })) << e.Log();
  EXPECT_EQ(cluster.Get("ml", "p")["spec"]["nodeName"], "dgx-2");
  EXPECT_TRUE(WaitUntil([&] { return e.State()["cluster"]["freeGpus"] == 10; })) << e.State().dump();
}

TEST_F(LeaseFixture, ALeaderThatCannotRenewItsLeaseExitsNonZero) {
  auto& e = Spawn("lost", kFastLease);
  ASSERT_TRUE(e.WaitReady()) << e.Log();
  cluster.server->FailNext({.verb = "*", .path_contains = "leases", .code = 503, .count = 1 << 30});
  ASSERT_TRUE(WaitUntil([&] { return e.Exited(); })) << e.Log();
  EXPECT_EQ(e.Wait(), 1);
}

}  // namespace
}  // namespace phalanx::extender::itest
