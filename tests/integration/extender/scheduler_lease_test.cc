// scheduler.replicas > 1 (extender/sync/scheduler_lease_follower.h): two extenders, each in "its"
// scheduler pod (POD_NAME), follow kube-scheduler's Lease phalanx-scheduler. Only the one whose
// pod's kube-scheduler holds it takes Lease phalanx-extender and binds; when the holder moves,
// the active extender moves with it, and back.
#include <cstdlib>

#include "tests/integration/extender/apiserver_harness.h"

namespace phalanx::extender::itest {
namespace {

const std::vector<std::string> kFollow = {"--leader-elect-lease-duration", "3s", "--leader-elect-renew-deadline", "2s",
                                          "--leader-elect-retry-period", "500ms", "--follow-scheduler-lease",
                                          "phalanx-system/phalanx-scheduler"};

struct SchedulerLeaseFixture : ::testing::Test {
  Cluster cluster;
  std::vector<std::unique_ptr<ExtenderProcess>> exts;

  void SetUp() override {
    cluster.Start(::testing::UnitTest::GetInstance()->current_test_info()->name());
    for (const char* n : {"dgx-1", "dgx-2"}) cluster.Seed(DgxNode(n));
    cluster.Seed(Json{{"apiVersion", "coordination.k8s.io/v1"},
                      {"kind", "Lease"},
                      {"metadata", {{"name", "phalanx-scheduler"}, {"namespace", "phalanx-system"}}},
                      {"spec", {{"holderIdentity", "sched-a_11111111-2222"}, {"leaseDurationSeconds", 15}}}});
  }
  void TearDown() override {
    unsetenv("POD_NAME");
    if (!HasFailure()) return;
    for (auto& e : exts) std::cerr << "--- extender log ---\n" << e->Log() << "\n";
  }
  // The extender of scheduler pod `pod` (kube-scheduler's identity there is "<pod>_<uuid>").
  ExtenderProcess& Spawn(const std::string& pod) {
    setenv("POD_NAME", pod.c_str(), 1);  // inherited by the spawned process
    exts.push_back(std::make_unique<ExtenderProcess>(pod, cluster.kubeconfig, kFollow));
    return *exts.back();
  }
  Json Lease(const std::string& name) {
    auto lease = cluster.server->Get("leases.coordination.k8s.io", "phalanx-system", name);
    return lease.ok() ? *lease : Json();
  }
  std::string ExtenderHolder() {
    const Json l = Lease("phalanx-extender");
    return l.is_object() ? l["spec"].value("holderIdentity", "") : "";
  }
  // kube-scheduler in another pod won (or lost) its election.
  void MoveSchedulerLease(const std::string& holder) {
    Json l = Lease("phalanx-scheduler");
    l["spec"]["holderIdentity"] = holder;
    auto r = cluster.server->Update("leases.coordination.k8s.io", l);
    ASSERT_TRUE(r.ok()) << r.status();
  }
};

TEST_F(SchedulerLeaseFixture, TheActiveExtenderFollowsKubeSchedulersLease) {
  auto& a = Spawn("sched-a");
  auto& b = Spawn("sched-b");
  ASSERT_TRUE(WaitUntil([&] { return a.Metric("phalanx_extender_leader") == 1; })) << a.Log();
  EXPECT_TRUE(ExtenderHolder().starts_with("sched-a_")) << ExtenderHolder();
  EXPECT_EQ(b.Metric("phalanx_extender_leader"), 0);

  // kube-scheduler of pod b takes over: a releases at once, b takes the Lease and binds.
  MoveSchedulerLease("sched-b_33333333-4444");
  ASSERT_TRUE(WaitUntil([&] { return b.Metric("phalanx_extender_leader") == 1; })) << b.Log();
  EXPECT_TRUE(ExtenderHolder().starts_with("sched-b_")) << ExtenderHolder();
  EXPECT_EQ(a.Metric("phalanx_extender_leader"), 0);
  cluster.Seed(Pod({.name = "p1", .gpus = 1, .priority = 1000}));
  const Json p1 = cluster.Get("ml", "p1");
  ASSERT_TRUE(WaitUntil([&] { return Passed(a.Post("filter", FilterBody(p1, {"dgx-1", "dgx-2"}))).size() == 2; }));
  EXPECT_NE(BindError(a.Post("bind", BindBody(p1, "dgx-1"))).find("not the active one"), std::string::npos);
  ASSERT_TRUE(WaitUntil([&] { return BindError(b.Post("bind", BindBody(p1, "dgx-1"))).empty(); })) << b.Log();
  EXPECT_EQ(cluster.Get("ml", "p1")["spec"]["nodeName"], "dgx-1");
  // The ledger's GPU gauges on /metrics (extender/state/ledger_metrics.h), the same on both replicas.
  for (ExtenderProcess* e : {&a, &b}) {
    EXPECT_TRUE(WaitUntil([&] {
      return Http(e->metrics_port(), "GET", "/metrics").body.find(
                 "\nphalanx_extender_gpus{pool=\"H100\",state=\"allocated\"} 1\n") != std::string::npos;
    })) << Http(e->metrics_port(), "GET", "/metrics").body;
    EXPECT_EQ(e->Metric("phalanx_extender_pending_gangs"), 0);
  }

  // And back to a (a new campaign in the same process).
  MoveSchedulerLease("sched-a_55555555-6666");
  ASSERT_TRUE(WaitUntil([&] { return a.Metric("phalanx_extender_leader") == 1; })) << a.Log();
  EXPECT_TRUE(ExtenderHolder().starts_with("sched-a_")) << ExtenderHolder();
  EXPECT_EQ(b.Metric("phalanx_extender_leader"), 0);

  // No kube-scheduler leads: no extender does.
  MoveSchedulerLease("");
  ASSERT_TRUE(WaitUntil([&] { return a.Metric("phalanx_extender_leader") == 0; })) << a.Log();
  EXPECT_EQ(b.Metric("phalanx_extender_leader"), 0);
  EXPECT_FALSE(a.Exited());
  EXPECT_FALSE(b.Exited());
}

}  // namespace
}  // namespace phalanx::extender::itest
