// GpuQueue status (extender/queues/queue_status.h): what the plan writes, when it writes nothing, and
// the two conditions with their transition times. Pure: its own clocks, no API server.
#include <gtest/gtest.h>

#include "core/json/json.h"
#include "extender/queues/queue_status.h"

namespace phalanx::extender {
namespace {

using json::Json;
using namespace std::chrono_literals;

const auto t0 = QueueStatusPlan::Clock::time_point{} + std::chrono::hours(1);
// 2026-11-26T10:00:00Z
const SystemTime wall0 = SystemTime{} + std::chrono::seconds(1795687200);

QueueObjects Objects(std::map<std::string, QueueObjects::Object> by_name, std::string set_error = "") {
  return QueueObjects{std::move(by_name), std::move(set_error)};
}

const Json& ConditionOf(const Json& status, const std::string& type) {
  static const Json none;
  for (const Json& c : status["conditions"]) {
    if (c["type"] == type) return c;
  }
  return none;
}

TEST(QueueStatusPlan, WritesOnlyChangesAtMostOncePerInterval) {
  QueueStatusPlan plan(10s);
  QueueStatusInfo q{"team-a", {{"H100", 8000, 12000, 4000, 0}}, 1, 8000, 0.75};
  const QueueObjects objects = Objects({{"team-a", {2, ""}}});
  auto due = plan.Due({q}, objects, t0, wall0);
  ASSERT_EQ(due.size(), 1u);
  const Json& st = due[0].patch["status"];
  EXPECT_EQ(st["usageSummary"], "H100: 12/8 +4 borrowed");
  EXPECT_EQ(st["pools"][0]["borrowed"], 4.0);
  EXPECT_EQ(st["pendingGpus"], 8.0);
  EXPECT_EQ(st["observedGeneration"], 2);
  plan.Written(due[0], t0);
  EXPECT_TRUE(plan.Due({q}, objects, t0 + 5min, wall0 + 5min).empty());  // unchanged: no PATCH at all
  q.pending_gangs = 2;
  EXPECT_TRUE(plan.Due({q}, objects, t0 + 3s, wall0 + 3s).empty());  // changed, but written lately
  EXPECT_EQ(plan.Due({q}, objects, t0 + 11s, wall0 + 11s).size(), 1u);
  EXPECT_TRUE(plan.Due({q}, Objects({}), t0 + 30s, wall0 + 30s).empty());  // no object: nothing to write
  // A refused write is retried once the interval has passed, not every period.
  QueueStatusPlan refused(10s);
  ASSERT_EQ(refused.Due({q}, objects, t0, wall0).size(), 1u);
  refused.Failed("team-a", t0);
  EXPECT_TRUE(refused.Due({q}, objects, t0 + 1s, wall0 + 1s).empty());
  EXPECT_EQ(refused.Due({q}, objects, t0 + 11s, wall0 + 11s).size(), 1u);
  // A new generation alone is a change (observedGeneration).
  QueueStatusPlan fresh(10s);
  plan.Written(fresh.Due({q}, objects, t0, wall0).at(0), t0);
  EXPECT_EQ(plan.Due({q}, Objects({{"team-a", {3, ""}}}), t0 + 11s, wall0 + 11s).size(), 1u);
}

TEST(QueueStatusConditions, ActiveAndBelowNominalWithPendingWorkFollowTheStanding) {
  QueueStatusPlan plan(10s);
  // 4 of 8 nominal GPUs in use, one gang of 8 waiting: what the alert is about.
  QueueStatusInfo q{"team-b", {{"H100", 8000, 4000, 0, 4000}}, 1, 8000, 0.5};
  const QueueObjects objects = Objects({{"team-b", {5, ""}}});
  auto due = plan.Due({q}, objects, t0, wall0);
  ASSERT_EQ(due.size(), 1u);
  const Json& st = due[0].status;
  ASSERT_EQ(st["conditions"].size(), 2u) << st.dump();
  const Json& active = ConditionOf(st, "Active");
  EXPECT_EQ(active["status"], "True");
  EXPECT_EQ(active["reason"], "Enforced");
  EXPECT_EQ(active["observedGeneration"], 5);
  EXPECT_EQ(active["lastTransitionTime"], "2026-11-26T10:00:00Z");
  const Json& below = ConditionOf(st, "BelowNominalWithPendingWork");
  EXPECT_EQ(below["status"], "True");
  EXPECT_EQ(below["reason"], "PendingBelowNominal");
  EXPECT_NE(below["message"].get<std::string>().find("H100: 4/8"), std::string::npos) << below.dump();
  plan.Written(due[0], t0);

  // More GPUs in use, still below nominal: the message changes, the transition time does not.
  q.pools[0].usage = 6000;
  q.pools[0].lent = 2000;
  due = plan.Due({q}, objects, t0 + 20s, wall0 + 20s);
  ASSERT_EQ(due.size(), 1u);
  EXPECT_NE(ConditionOf(due[0].status, "BelowNominalWithPendingWork")["message"].get<std::string>().find("H100: 6/8"),
            std::string::npos);
  EXPECT_EQ(ConditionOf(due[0].status, "BelowNominalWithPendingWork")["lastTransitionTime"], "2026-11-26T10:00:00Z");
  plan.Written(due[0], t0 + 20s);

  // At nominal with work still waiting: False, a new transition time; Active keeps its own.
  q.pools[0].usage = 8000;
  q.pools[0].lent = 0;
  due = plan.Due({q}, objects, t0 + 40s, wall0 + 40s);
  ASSERT_EQ(due.size(), 1u);
  const Json& at = ConditionOf(due[0].status, "BelowNominalWithPendingWork");
  EXPECT_EQ(at["status"], "False");
  EXPECT_EQ(at["reason"], "AtNominal");
  EXPECT_EQ(at["lastTransitionTime"], "2026-11-26T10:00:40Z");
  EXPECT_EQ(ConditionOf(due[0].status, "Active")["lastTransitionTime"], "2026-11-26T10:00:00Z");
  plan.Written(due[0], t0 + 40s);

  // Nothing waits: False with another reason; below nominal alone is no alarm.
  q.pending_gangs = 0;
  q.pending = 0;
  q.pools[0].usage = 2000;
  due = plan.Due({q}, objects, t0 + 60s, wall0 + 60s);
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(ConditionOf(due[0].status, "BelowNominalWithPendingWork")["reason"], "NoPendingWork");
  EXPECT_EQ(ConditionOf(due[0].status, "BelowNominalWithPendingWork")["lastTransitionTime"], "2026-11-26T10:00:40Z");
}

TEST(QueueStatusConditions, AQueueNotEnforcedSaysWhyAndLosesItsUsageFields) {
  QueueStatusPlan plan(10s);
  QueueStatusInfo a{"team-a", {{"H100", 8000, 8000, 0, 0}}, 0, 0, 1.0};
  // team-x never decoded; child names a parent that does not exist (the set is refused, so
  // the engine still runs the previous set: team-a only).
  const std::string set_error = "GpuQueue child: spec.parent: no queue \"missing\"";
  const QueueObjects objects = Objects(
      {{"team-a", {1, ""}}, {"team-x", {2, "spec.quotas[0].nominal: at most 3 decimals (milli-GPUs)"}}, {"child", {1, ""}}},
      set_error);
  auto due = plan.Due({a}, objects, t0, wall0);
  ASSERT_EQ(due.size(), 3u);
  std::map<std::string, Json> by_name;
  for (auto& w : due) by_name[w.name] = w.status;

  const Json& x = ConditionOf(by_name["team-x"], "Active");
  EXPECT_EQ(x["status"], "False");
  EXPECT_EQ(x["reason"], "InvalidSpec");
  EXPECT_EQ(x["message"], "spec.quotas[0].nominal: at most 3 decimals (milli-GPUs)");
  EXPECT_FALSE(by_name["team-x"].contains("pools"));
  EXPECT_TRUE(ConditionOf(by_name["team-x"], "BelowNominalWithPendingWork").is_null()) << "not judged when not enforced";

  const Json& child = ConditionOf(by_name["child"], "Active");
  EXPECT_EQ(child["status"], "False");
  EXPECT_EQ(child["reason"], "QueueSetInvalid");
  EXPECT_NE(child["message"].get<std::string>().find("spec.parent: no queue \"missing\""), std::string::npos);

  const Json& still = ConditionOf(by_name["team-a"], "Active");
  EXPECT_EQ(still["status"], "True");
  EXPECT_EQ(still["reason"], "PreviousSpecInForce") << "the set with its newer versions is not in force";

  // A queue whose new spec does not decode keeps its last valid version: Active stays True.
  QueueStatusPlan stale(10s);
  auto kept = stale.Due({a}, Objects({{"team-a", {4, "spec.weight: must be > 0"}}}), t0, wall0);
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(ConditionOf(kept[0].status, "Active")["reason"], "PreviousSpecInForce");
  EXPECT_NE(ConditionOf(kept[0].status, "Active")["message"].get<std::string>().find("spec.weight"), std::string::npos);
  EXPECT_TRUE(kept[0].status.contains("pools"));

  // A queue neither enforced nor refused is not applied yet (the watch lags the list): no write.
  QueueStatusPlan early(10s);
  EXPECT_TRUE(early.Due({}, Objects({{"team-new", {1, ""}}}), t0, wall0).empty());

  // A queue that leaves the engine (here: the extender restarted and its spec no longer
  // decodes): the merge patch removes the usage fields written before.
  QueueStatusPlan leaving(10s);
  auto first = leaving.Due({a}, Objects({{"team-a", {1, ""}}}), t0, wall0);
  leaving.Written(first.at(0), t0);
  auto gone = leaving.Due({}, Objects({{"team-a", {2, "spec: expected an object"}}}), t0 + 20s, wall0 + 20s);
  ASSERT_EQ(gone.size(), 1u);
  const Json& patch = gone[0].patch["status"];
  for (const char* key : {"pools", "usageSummary", "pendingGangs", "pendingGpus", "fairShare"}) {
    EXPECT_TRUE(patch.contains(key) && patch[key].is_null()) << key << " in " << patch.dump();
  }
  EXPECT_EQ(ConditionOf(gone[0].status, "Active")["lastTransitionTime"], "2026-11-26T10:00:20Z");
  EXPECT_FALSE(gone[0].status.contains("pools"));
}

TEST(QueueStatusConditions, AfterARestartTheObjectsStatusIsKeptWhenRightAndItsTransitionTimesAlways) {
  QueueStatusInfo q{"team-a", {{"H100", 8000, 8000, 0, 0}}, 0, 0, 1.0};
  const QueueObjects objects = Objects({{"team-a", {1, ""}}});
  QueueStatusPlan before(10s);
  auto written = before.Due({q}, objects, t0, wall0);
  ASSERT_EQ(written.size(), 1u);
  // The server's copy, as a GET returns it (numbers that are whole come back as integers).
  Json on_server = Json::parse(written[0].status.dump());
  on_server["pendingGpus"] = 0;
  on_server["pools"][0]["usage"] = 8;

  QueueStatusPlan after(10s);  // a new process (or a new leader) an hour later
  EXPECT_FALSE(after.Knows("team-a"));
  after.Seed("team-a", on_server);
  EXPECT_TRUE(after.Knows("team-a"));
  EXPECT_TRUE(after.Due({q}, objects, t0 + 1h, wall0 + 1h).empty()) << "the status there is already right";

  // A change after the restart keeps the conditions' transition times from the object.
  q.pending_gangs = 1;
  q.pending = 8000;
  auto changed = after.Due({q}, objects, t0 + 1h, wall0 + 1h);
  ASSERT_EQ(changed.size(), 1u) << "a seeded status is not rate-limited";
  EXPECT_EQ(ConditionOf(changed[0].status, "Active")["lastTransitionTime"], "2026-11-26T10:00:00Z");
  EXPECT_EQ(ConditionOf(changed[0].status, "BelowNominalWithPendingWork")["reason"], "AtNominal");
  EXPECT_EQ(ConditionOf(changed[0].status, "BelowNominalWithPendingWork")["lastTransitionTime"], "2026-11-26T10:00:00Z");

  after.Reset();
  EXPECT_FALSE(after.Knows("team-a"));
}

}  // namespace
}  // namespace phalanx::extender
