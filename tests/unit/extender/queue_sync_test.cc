// GpuQueue objects as team queues (extender/queues/queue_sync.h): pure, no API server. Their status
// (extender/queues/queue_status.h): queue_status_test.cc.
#include <gtest/gtest.h>

#include "core/json/json.h"
#include "extender/config.h"
#include "extender/queues/queue_sync.h"

namespace phalanx::extender {
namespace {

using json::Json;

Json Queue(const std::string& name, Json spec) {
  return Json{{"apiVersion", "phalanx.io/v1alpha1"}, {"kind", "GpuQueue"},
              {"metadata", {{"name", name}, {"uid", "u-" + name}, {"generation", 3}}}, {"spec", spec}};
}

GpuQueueInfo Decode(const std::string& name, Json spec) {
  auto q = DecodeGpuQueue(Queue(name, std::move(spec)));
  EXPECT_TRUE(q.ok()) << q.status();
  return q.ok() ? *q : GpuQueueInfo{};
}

TEST(GpuQueueDecode, ReadsQuotasInMilliGpusSelectorAndDefault) {
  GpuQueueInfo q = Decode("team-a", {{"cohort", "lab"}, {"weight", 2}, {"default", true},
                                     {"namespaceSelector", {{"matchLabels", {{"team", "a"}}},
                                                            {"matchExpressions", Json::array({{{"key", "tier"}, {"operator", "NotIn"}, {"values", {"x"}}}})}}},
                                     {"quotas", Json::array({{{"pool", "H100"}, {"nominal", 8}, {"borrowingLimit", 4}},
                                                             {{"pool", "A100"}, {"nominal", 10.5}, {"lendingLimit", 2}}})}});
  EXPECT_EQ(q.error, "");
  EXPECT_EQ(q.uid, "u-team-a");
  EXPECT_EQ(q.generation, 3);
  EXPECT_TRUE(q.is_default);
  EXPECT_EQ(q.spec.weight, 2);
  ASSERT_EQ(q.spec.quotas.size(), 2u);
  EXPECT_EQ(q.spec.quotas[0].nominal, 8000);
  EXPECT_EQ(q.spec.quotas[0].borrowing_limit, 4000);
  EXPECT_EQ(q.spec.quotas[1].nominal, 10500);
  EXPECT_EQ(q.spec.quotas[1].lending_limit, 2000);
  EXPECT_TRUE(q.Selects({"ns", {{"team", "a"}}}));
  EXPECT_FALSE(q.Selects({"ns", {{"team", "a"}, {"tier", "x"}}}));
  EXPECT_FALSE(q.Selects({"ns", {{"team", "b"}}}));
}

TEST(GpuQueueDecode, AMalformedSpecNamesTheField) {
  EXPECT_EQ(Decode("q", {{"quotas", Json::array({{{"pool", "H100"}, {"nominal", "lots"}}})}}).error,
            "spec.quotas[0].nominal: expected a number of GPUs");
  EXPECT_EQ(Decode("q", {{"quotas", Json::array({{{"pool", "H100"}, {"nominal", -1}}})}}).error,
            "spec.quotas[0].nominal: must be a number of GPUs >= 0");
  EXPECT_EQ(Decode("q", {{"quotas", Json::array({{{"pool", "H100"}, {"nominal", 2}, {"lendingLimit", 3}}})}}).error,
            "spec.quotas[0].lendingLimit: must not exceed nominal");
  EXPECT_EQ(Decode("q", {{"weight", 0}}).error, "spec.weight: must be > 0");
  EXPECT_EQ(Decode("q", {{"parent", "p"}, {"cohort", "c"}}).error,
            "spec.cohort: a child queue shares with its siblings; set the cohort on its parent");
  EXPECT_EQ(Decode("q", {{"namespaceSelector", {{"matchExpressions", Json::array({{{"key", "a"}, {"operator", "In"}}})}}}}).error,
            "spec.namespaceSelector.matchExpressions[0].values: In and NotIn need values; Exists and DoesNotExist take none");
  EXPECT_FALSE(DecodeGpuQueue(Json{{"metadata", Json::object()}}).ok());
}

TEST(AssignQueues, SkipsInvalidQueuesMapsNamespacesAndNeedsOneDefault) {
  std::vector<GpuQueueInfo> queues = {
      Decode("team-b", {{"cohort", "lab"}, {"namespaceSelector", {{"matchLabels", {{"team", "b"}}}}},
                        {"quotas", Json::array({{{"pool", "H100"}, {"nominal", 8}}})}}),
      Decode("shared", {{"cohort", "lab"}, {"default", true}, {"quotas", Json::array({{{"pool", "H100"}, {"nominal", 0}}})}}),
      Decode("broken", {{"weight", -1}}),
  };
  auto a = AssignQueues(queues, {{"ml-b", {{"team", "b"}}}, {"other", {}}});
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_EQ(a->config.queues.size(), 2u);  // "broken" is left out
  EXPECT_EQ(a->config.queues[0].name, "shared");  // sorted by name
  EXPECT_EQ(a->config.default_queue, "shared");
  EXPECT_EQ(a->namespace_queue, (std::map<std::string, std::string>{{"ml-b", "team-b"}}));

  queues[1].is_default = false;
  auto none = AssignQueues(queues, {});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("spec.default"), std::string_view::npos) << none.status();

  queues[1].is_default = true;
  queues.push_back(Decode("child", {{"parent", "missing"}}));
  auto orphan = AssignQueues(queues, {});
  ASSERT_FALSE(orphan.ok());
  EXPECT_EQ(orphan.status().message(), "GpuQueue child: spec.parent: no queue \"missing\"");

  EXPECT_TRUE(AssignQueues({}, {})->config.queues.empty());  // no GpuQueue: queues off
}

}  // namespace
}  // namespace phalanx::extender

namespace phalanx::extender {
namespace {

TEST(ConfigTeamQueuesTest, TheKnobsGpuQueuesDoNotCarryAndBadValuesNameTheKey) {
  auto c = ParseConfig("teamQueues:\n  crossQueuePreemptionPriority: -1\n  reclaimAfterSeconds: 120\n");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->team_queues.cross_queue_preemption_priority, -1);
  EXPECT_DOUBLE_EQ(c->team_queues.reclaim_after_s, 120);
  EXPECT_TRUE(c->team_queues.queues.empty());
  auto defaults = ParseConfig("gangTimeoutSeconds: 60\n");
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->team_queues.cross_queue_preemption_priority, 1000000);
  EXPECT_DOUBLE_EQ(defaults->team_queues.reclaim_after_s, 0);
  auto bad = ParseConfig("teamQueues: {reclaimAfterSeconds: -5}\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "teamQueues.reclaimAfterSeconds: must be >= 0");
  auto queues = ParseConfig("teamQueues: {queues: []}\n");
  ASSERT_FALSE(queues.ok());
  EXPECT_NE(queues.status().message().find("teamQueues.queues: unknown key"), std::string_view::npos) << queues.status();
}

}  // namespace
}  // namespace phalanx::extender
