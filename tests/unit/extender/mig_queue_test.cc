// Pods on MIG devices in team queues (extender/mig/mig_queues.cc): a pod's MIG devices count in
// its queue's quota of the node's pool (3g.40gb = 0.428 GPU); filter refuses a pod its queue
// has no room for on every node as unresolvable, bind re-checks, the admission pass books
// bound pods in the engine (GpuQueue status shows them). Without queues nothing changes.
#include <gtest/gtest.h>

#include "core/topology/reference_machines.h"
#include "tests/unit/extender/test_cluster.h"

namespace phalanx::extender::testing {
namespace {

PodInfo MigPod(const std::string& name, const std::string& queue, const std::string& profile = "3g.40gb") {
  PodInfo p = GpuPod(name, 0);
  p.mig[profile] = 1;
  p.mig_container = "infer";
  if (!queue.empty()) p.labels["phalanx.io/queue"] = queue;
  return p;
}

// team-a and team-b: 1 GPU of A100 each, no cohort; `shared` (no quota) is the default.
QueueAssignment OneGpuEach() {
  QueueAssignment a;
  for (const char* team : {"team-a", "team-b"}) {
    scheduling::QueueSpec q;
    q.name = team;
    q.quotas.push_back({.pool = "A100", .nominal = 1000, .borrowing_limit = std::nullopt, .lending_limit = std::nullopt});
    a.config.queues.push_back(q);
  }
  scheduling::QueueSpec shared;
  shared.name = "shared";
  a.config.queues.push_back(shared);
  a.config.default_queue = "shared";
  return a;
}

struct MigCluster {
  TestCluster c;
  const std::vector<std::string> nodes = {"mig-0", "mig-1", "mig-2", "mig-3", "mig-4"};
  explicit MigCluster(bool queues = true) {
    for (const auto& n : nodes) EXPECT_TRUE(c.ext.OnNode(A100MigNode(n)).ok());
    if (queues) {
      EXPECT_TRUE(c.ext.SetQueues(OneGpuEach()).ok());
    }
  }
  FilterResult Filter(const PodInfo& p) { return c.ext.Filter(Args(p, nodes)); }
  std::string Bind(const PodInfo& p, const std::string& node) {
    BindProbe probe;
    c.ext.Bind(BindOf(p, node), probe.Callback());
    std::string error = probe.Wait();
    c.ext.DrainForTest();
    return error;
  }
  scheduling::Milli Usage(const std::string& queue) const {
    for (const QueueStatusInfo& s : c.ext.QueueStatuses()) {
      if (s.name != queue) continue;
      for (const auto& u : s.pools)
        if (u.pool == "A100") return u.usage;
    }
    return -1;
  }
};

constexpr std::string_view kFull = "queue team-a is at 0.856/1 nominal GPUs of A100 and has no cohort to borrow from";

TEST(MigQueueTest, AQueueHoldsMigPodsToItsQuota) {
  MigCluster m;
  const PodInfo p1 = MigPod("p1", "team-a"), p2 = MigPod("p2", "team-a"), p3 = MigPod("p3", "team-a");
  ASSERT_EQ(m.Filter(p1).passed.size(), 5u);
  ASSERT_EQ(m.Bind(p1, "mig-0"), "");
  ASSERT_EQ(m.Filter(p2).passed.size(), 4u);  // counted since its bind, before any pass
  ASSERT_EQ(m.Bind(p2, "mig-1"), "");
  // 3 x 0.428 = 1.284 > 1: every node refuses it for good (no preemption for it).
  FilterResult r = m.Filter(p3);
  EXPECT_TRUE(r.passed.empty());
  EXPECT_TRUE(r.failed.empty());
  ASSERT_EQ(r.unresolvable.size(), 5u);
  for (const auto& [node, why] : r.unresolvable) EXPECT_EQ(why.str(), kFull) << node;
  // Bind re-checks at the commit point.
  const std::string refused = m.Bind(p3, "mig-2");
  EXPECT_NE(refused.find(kFull), std::string::npos) << refused;
  // Another queue's pods are not held to team-a's quota.
  const PodInfo q1 = MigPod("q1", "team-b");
  ASSERT_EQ(m.Filter(q1).passed.size(), 3u);
  ASSERT_EQ(m.Bind(q1, "mig-2"), "");

  // The pass books them in the engine: GpuQueue status shows the usage; still refused.
  m.c.clock.Advance(std::chrono::seconds(2));
  m.c.ext.Tick();
  EXPECT_EQ(m.Usage("team-a"), 856);
  EXPECT_EQ(m.Usage("team-b"), 428);
  FilterResult again = m.Filter(p3);
  ASSERT_EQ(again.unresolvable.size(), 5u);
  EXPECT_EQ(again.unresolvable[0].second.str(), kFull);

  // One ends: its quota is free at the next pass.
  m.c.ext.OnPodDeleted(p1.uid);
  m.c.clock.Advance(std::chrono::seconds(2));
  m.c.ext.Tick();
  EXPECT_EQ(m.Usage("team-a"), 428);
  EXPECT_EQ(m.Filter(p3).passed.size(), 3u);  // mig-0, mig-3, mig-4
}

TEST(MigQueueTest, TheNamespacesQueueAndTheDefaultApply) {
  MigCluster m;
  QueueAssignment a = OneGpuEach();
  a.namespace_queue["default"] = "team-b";  // the test pods' namespace
  ASSERT_TRUE(m.c.ext.SetQueues(a).ok());
  for (const char* name : {"n1", "n2"}) {
    const PodInfo p = MigPod(name, "");
    const FilterResult r = m.Filter(p);  // embedded mode: bind knows the pod from its filter
    ASSERT_FALSE(r.passed.empty());
    ASSERT_EQ(m.Bind(p, std::string(r.passed[0])), "");
  }
  FilterResult r = m.Filter(MigPod("n3", ""));
  EXPECT_TRUE(r.passed.empty());
  ASSERT_FALSE(r.unresolvable.empty());
  EXPECT_EQ(r.unresolvable[0].second.str(),
            "queue team-b is at 0.856/1 nominal GPUs of A100 and has no cohort to borrow from");
  // Without the namespace's queue: the default queue (no quota on A100, a pool queues manage).
  ASSERT_TRUE(m.c.ext.SetQueues(OneGpuEach()).ok());
  m.c.clock.Advance(std::chrono::seconds(2));
  m.c.ext.Tick();
  EXPECT_EQ(m.Usage("team-b"), 0);
  EXPECT_EQ(m.Usage("shared"), 856);
  const FilterResult after = m.Filter(MigPod("n3", ""));
  EXPECT_TRUE(after.passed.empty());
  ASSERT_FALSE(after.unresolvable.empty());
  EXPECT_EQ(after.unresolvable[0].second.str(),
            "queue shared is at 0.856/0 nominal GPUs of A100 and has no cohort to borrow from");
  EXPECT_EQ(m.Filter(MigPod("n4", "team-a")).passed.size(), 3u);
}

// The pass books only what changed since the last one (Ledger::MigChangedSince): a node
// removed takes its pods' bookings with it; past the change log's length it books them all.
TEST(MigQueueTest, ThePassFollowsNodeChangesAndALongChangeLog) {
  MigCluster m;
  const PodInfo p1 = MigPod("p1", "team-a"), p2 = MigPod("p2", "team-a");
  ASSERT_FALSE(m.Filter(p1).passed.empty());
  ASSERT_EQ(m.Bind(p1, "mig-0"), "");
  ASSERT_FALSE(m.Filter(p2).passed.empty());
  ASSERT_EQ(m.Bind(p2, "mig-1"), "");
  m.c.clock.Advance(std::chrono::seconds(2));
  m.c.ext.Tick();
  ASSERT_EQ(m.Usage("team-a"), 856);
  m.c.ext.OnNodeDeleted(NodeName("mig-0"));
  m.c.clock.Advance(std::chrono::seconds(2));
  m.c.ext.Tick();
  EXPECT_EQ(m.Usage("team-a"), 428);
  // p2 updated (released and charged again each time) more often than the log holds, then
  // moved to team-b's queue by its label: booked there all the same.
  PodInfo bound;
  m.c.ext.ReadLedger([&](const Ledger& l) { bound = l.FindPod(p2.uid)->info; });
  ASSERT_EQ(bound.node_name, "mig-1");
  for (int i = 0; i < 10000; ++i) m.c.ext.OnPod(bound);
  bound.labels["phalanx.io/queue"] = "team-b";
  m.c.ext.OnPod(bound);
  m.c.clock.Advance(std::chrono::seconds(2));
  m.c.ext.Tick();
  EXPECT_EQ(m.Usage("team-a"), 0);
  EXPECT_EQ(m.Usage("team-b"), 428);
}

TEST(MigQueueTest, WithoutQueuesNothingChanges) {
  MigCluster m(/*queues=*/false);
  for (int i = 0; i < 3; ++i) {
    const PodInfo p = MigPod("p" + std::to_string(i), "team-a");
    ASSERT_EQ(m.Filter(p).passed.size(), static_cast<size_t>(5 - i));
    ASSERT_EQ(m.Bind(p, "mig-" + std::to_string(i)), "");
  }
  m.c.ext.Tick();
  EXPECT_TRUE(m.c.ext.QueueStatuses().empty());
  // Queues turned on later count what runs at the next pass.
  ASSERT_TRUE(m.c.ext.SetQueues(OneGpuEach()).ok());
  m.c.clock.Advance(std::chrono::seconds(2));
  m.c.ext.Tick();
  EXPECT_EQ(m.Usage("team-a"), 1284);
  EXPECT_FALSE(m.Filter(MigPod("p9", "team-a")).unresolvable.empty());
  EXPECT_TRUE(m.Filter(MigPod("p9", "team-a")).passed.empty());
}

}  // namespace
}  // namespace phalanx::extender::testing
