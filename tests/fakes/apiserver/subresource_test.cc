// The pods/eviction and pods/binding rules the real server enforces and Phalanx depends on:
// PodDisruptionBudgets in eviction (429 with the DisruptionBudget cause, 500 for two budgets,
// nothing changed when refused; pending, terminal and unready pods as kube-apiserver treats
// them) and the Binding's uid/resourceVersion preconditions. Raw HTTP, no client logic.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "tests/fakes/apiserver/fake_apiserver.h"
#include "tests/fakes/apiserver/raw_client.h"

namespace phalanx::fakes::apiserver {
namespace {

using json::Json;
using testing::RawClient;
using testing::RawResponse;

constexpr const char* kPods = "/api/v1/namespaces/ml/pods";
constexpr const char* kBudgets = "/apis/policy/v1/namespaces/ml/poddisruptionbudgets";
constexpr const char* kRefused = "Cannot evict pod as it would violate the pod's disruption budget.";

// A bound pod as a kubelet reports it: `phase`, and Ready=`ready`.
Json RunningPod(const std::string& name, bool ready = true, const std::string& phase = "Running",
                const std::string& app = "train") {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", "ml"}, {"labels", {{"app", app}}}}},
          {"spec",
           {{"nodeName", "n1"},
            {"terminationGracePeriodSeconds", 30},
            {"containers", Json::array({{{"name", "c"}, {"image", "busybox"}}})}}},
          {"status",
           {{"phase", phase},
            {"conditions", Json::array({{{"type", "Ready"}, {"status", ready ? "True" : "False"}}})}}}};
}

// A policy/v1 budget selecting app=<app>; `rule` is {"minAvailable": ...} or {"maxUnavailable": ...}.
Json Budget(const std::string& name, Json rule, const std::string& app = "train") {
  Json spec = std::move(rule);
  spec["selector"] = {{"matchLabels", {{"app", app}}}};
  return {{"apiVersion", "policy/v1"},
          {"kind", "PodDisruptionBudget"},
          {"metadata", {{"name", name}}},
          {"spec", std::move(spec)}};
}

bool HasDisruptionTarget(const Json& pod) {
  if (!pod.contains("status") || !pod["status"].contains("conditions")) return false;
  for (const auto& c : pod["status"]["conditions"]) {
    if (c["type"] == "DisruptionTarget") return true;
  }
  return false;
}

class SubresourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto started = FakeApiServer::Start();
    ASSERT_TRUE(started.ok()) << started.status();
    server_ = std::move(started).value();
    client_ = std::make_unique<RawClient>(server_->url());
  }
  void SeedPod(const Json& pod) { ASSERT_TRUE(server_->Seed(pod).ok()); }
  void CreateBudget(const Json& budget) {
    auto created = client_->Post(kBudgets, budget);
    ASSERT_EQ(created.status, 201) << created.body;
  }
  RawResponse Evict(const std::string& name) {
    return client_->Post(std::string(kPods) + "/" + name + "/eviction",
                         Json{{"apiVersion", "policy/v1"}, {"kind", "Eviction"}, {"metadata", {{"name", name}}}});
  }
  Json GetPod(const std::string& name) { return client_->Get(std::string(kPods) + "/" + name).Json(); }

  std::unique_ptr<FakeApiServer> server_;
  std::unique_ptr<RawClient> client_;
};

TEST_F(SubresourceTest, BudgetAllowsEvictionsDownToMinAvailableThenRefusesWithoutChangingThePod) {
  for (const char* name : {"p0", "p1", "p2"}) SeedPod(RunningPod(name));
  CreateBudget(Budget("train", {{"minAvailable", 2}}));

  auto first = Evict("p0");
  ASSERT_EQ(first.status, 201) << first.body;
  const Json p0 = GetPod("p0");
  EXPECT_TRUE(p0["metadata"].contains("deletionTimestamp")) << p0.dump();
  EXPECT_TRUE(HasDisruptionTarget(p0)) << p0.dump();

  const Json before = GetPod("p1");
  const uint64_t rv_before = server_->resource_version();
  auto refused = Evict("p1");
  ASSERT_EQ(refused.status, 429) << refused.body;
  const Json status = refused.Json();
  EXPECT_EQ(status["kind"], "Status");
  EXPECT_EQ(status["status"], "Failure");
  EXPECT_EQ(status["reason"], "TooManyRequests");
  EXPECT_EQ(status["message"], kRefused);
  ASSERT_EQ(status["details"]["causes"].size(), 1u) << refused.body;
  EXPECT_EQ(status["details"]["causes"][0]["reason"], "DisruptionBudget");
  EXPECT_EQ(status["details"]["causes"][0]["message"],
            "The disruption budget train needs 2 healthy pods and has 2 currently");
  EXPECT_EQ(kube::FindHeader(refused.headers, "Retry-After"), "");
  // Nothing was written: same pod, same version, no DisruptionTarget.
  EXPECT_EQ(GetPod("p1"), before);
  EXPECT_FALSE(HasDisruptionTarget(GetPod("p1")));
  EXPECT_EQ(server_->resource_version(), rv_before);

  // The terminating pod is no longer healthy; once it is gone nothing changes either.
  ASSERT_EQ(client_->Send("DELETE", std::string(kPods) + "/p0?gracePeriodSeconds=0").status, 200);
  EXPECT_EQ(Evict("p2").status, 429);
}

TEST_F(SubresourceTest, MaxUnavailableAndPercentagesCountTheControllersScale) {
  // Two ReplicaSets of 4; their pods point at them as controller.
  for (const char* app : {"a", "b"}) {
    auto rs = server_->Create("replicasets.apps",
                              Json{{"apiVersion", "apps/v1"}, {"kind", "ReplicaSet"},
                                   {"metadata", {{"name", app}, {"namespace", "ml"}}},
                                   {"spec", {{"replicas", 4}}}});
    ASSERT_TRUE(rs.ok()) << rs.status();
    for (int i = 0; i < 4; ++i) {
      Json pod = RunningPod(std::string(app) + std::to_string(i), true, "Running", app);
      pod["metadata"]["ownerReferences"] =
          Json::array({{{"apiVersion", "apps/v1"}, {"kind", "ReplicaSet"}, {"name", app},
                        {"uid", (*rs)["metadata"]["uid"]}, {"controller", true}}});
      SeedPod(pod);
    }
  }
  // Scale 4: maxUnavailable 25% -> 1 may go; minAvailable 30% -> ceil(1.2) = 2 must stay. The
  // scale, not the shrinking pod count, stays the base once evicted pods are gone.
  CreateBudget(Budget("a", {{"maxUnavailable", "25%"}}, "a"));
  CreateBudget(Budget("b", {{"minAvailable", "30%"}}, "b"));

  EXPECT_EQ(Evict("a0").status, 201);
  ASSERT_EQ(client_->Send("DELETE", std::string(kPods) + "/a0?gracePeriodSeconds=0").status, 200);
  auto second = Evict("a1");
  ASSERT_EQ(second.status, 429) << second.body;
  EXPECT_EQ(second.Json()["details"]["causes"][0]["message"],
            "The disruption budget a needs 3 healthy pods and has 3 currently");
  EXPECT_EQ(Evict("b0").status, 201);
  EXPECT_EQ(Evict("b1").status, 201);
  auto third = Evict("b2");
  ASSERT_EQ(third.status, 429) << third.body;
  EXPECT_EQ(third.Json()["details"]["causes"][0]["message"],
            "The disruption budget b needs 2 healthy pods and has 2 currently");
}

TEST_F(SubresourceTest, BarePodsUnderMaxUnavailableGetNoDisruptionsButAnIntegerMinAvailableWorks) {
  // The disruption controller cannot find a scale for pods without a controller: fail-safe.
  for (const char* name : {"x0", "x1", "x2"}) SeedPod(RunningPod(name, true, "Running", "x"));
  CreateBudget(Budget("x", {{"maxUnavailable", 2}}, "x"));
  auto refused = Evict("x0");
  ASSERT_EQ(refused.status, 429) << refused.body;
  EXPECT_EQ(refused.Json()["details"]["causes"][0]["reason"], "DisruptionBudget");
  ASSERT_EQ(client_->Delete(std::string(kBudgets) + "/x").status, 200);
  CreateBudget(Budget("x", {{"minAvailable", 1}}, "x"));
  EXPECT_EQ(Evict("x0").status, 201);
}

TEST_F(SubresourceTest, PendingAndTerminalPodsAreEvictedWithoutConsultingTheBudget) {
  SeedPod(RunningPod("running"));
  SeedPod(RunningPod("pending", false, "Pending"));
  SeedPod(RunningPod("done", false, "Succeeded"));
  CreateBudget(Budget("none", {{"maxUnavailable", 0}}));

  EXPECT_EQ(Evict("running").status, 429);
  EXPECT_EQ(Evict("pending").status, 201);
  EXPECT_EQ(Evict("done").status, 201);
  EXPECT_EQ(client_->Get(std::string(kPods) + "/done").status, 404);  // finished: gone at once
  // A pod created through the API (phase Pending, unbound) is not protected either.
  ASSERT_EQ(client_->Post(kPods, Json{{"metadata", {{"name", "fresh"}, {"labels", {{"app", "train"}}}}},
                                      {"spec", {{"containers", Json::array({{{"name", "c"}, {"image", "x"}}})}}}})
                .status,
            201);
  EXPECT_EQ(Evict("fresh").status, 201);
  EXPECT_EQ(client_->Get(std::string(kPods) + "/fresh").status, 404);
}

TEST_F(SubresourceTest, UnreadyPodGoesOnlyWhenTheApplicationIsHealthyOrThePolicySaysAlwaysAllow) {
  SeedPod(RunningPod("ready-0"));
  SeedPod(RunningPod("ready-1"));
  SeedPod(RunningPod("unready", false));
  CreateBudget(Budget("train", {{"minAvailable", 2}}));
  // 2 healthy of 2 desired: the unready pod may go without using the budget...
  EXPECT_EQ(Evict("unready").status, 201);
  // ...but not once the application is below its budget (IfHealthyBudget, the default).
  ASSERT_EQ(client_->Send("DELETE", std::string(kPods) + "/unready?gracePeriodSeconds=0").status, 200);
  ASSERT_EQ(client_->Send("DELETE", std::string(kPods) + "/ready-1?gracePeriodSeconds=0").status, 200);
  SeedPod(RunningPod("unready", false));
  auto refused = Evict("unready");
  ASSERT_EQ(refused.status, 429) << refused.body;
  EXPECT_EQ(refused.Json()["details"]["causes"][0]["message"],
            "The disruption budget train needs 2 healthy pods and has 1 currently");
  EXPECT_FALSE(HasDisruptionTarget(GetPod("unready")));

  Json always = client_->Get(std::string(kBudgets) + "/train").Json();
  always["spec"]["unhealthyPodEvictionPolicy"] = "AlwaysAllow";
  ASSERT_EQ(client_->Put(std::string(kBudgets) + "/train", always).status, 200);
  EXPECT_EQ(Evict("unready").status, 201);
  EXPECT_EQ(Evict("ready-0").status, 429);  // a ready pod still needs the budget
}

TEST_F(SubresourceTest, PodSelectedByTwoBudgetsIsAnInternalErrorAndStaysUntouched) {
  SeedPod(RunningPod("p"));
  CreateBudget(Budget("one", {{"maxUnavailable", 5}}));
  Json everything = Budget("two", {{"maxUnavailable", 5}});
  everything["spec"]["selector"] = Json::object();  // policy/v1: {} selects every pod
  CreateBudget(everything);
  const Json before = GetPod("p");
  auto failed = Evict("p");
  ASSERT_EQ(failed.status, 500) << failed.body;
  const Json status = failed.Json();
  EXPECT_EQ(status["status"], "Failure");
  EXPECT_EQ(status["code"], 500);
  EXPECT_FALSE(status.contains("reason")) << failed.body;
  EXPECT_EQ(status["message"],
            "This pod has more than one PodDisruptionBudget, which the eviction subresource does "
            "not support.");
  EXPECT_EQ(GetPod("p"), before);
}

TEST_F(SubresourceTest, BudgetsOfOtherNamespacesOrWithoutSelectorSelectNothing) {
  SeedPod(RunningPod("p"));
  ASSERT_EQ(client_->Post("/apis/policy/v1/namespaces/other/poddisruptionbudgets",
                          Budget("elsewhere", {{"maxUnavailable", 0}}))
                .status,
            201);
  Json no_selector = Budget("blind", {{"maxUnavailable", 0}});
  no_selector["spec"].erase("selector");
  CreateBudget(no_selector);
  CreateBudget(Budget("others", {{"maxUnavailable", 0}}, "serving"));
  auto evicted = Evict("p");
  EXPECT_EQ(evicted.status, 201) << evicted.body;
}

TEST_F(SubresourceTest, EvictionResourceVersionPreconditionIsCheckedBeforeAnythingIsWritten) {
  SeedPod(RunningPod("p"));
  const Json before = GetPod("p");
  auto eviction = [](const Json& rv) {
    return Json{{"metadata", {{"name", "p"}}}, {"deleteOptions", {{"preconditions", {{"resourceVersion", rv}}}}}};
  };
  auto stale = client_->Post(std::string(kPods) + "/p/eviction", eviction("1"));
  ASSERT_EQ(stale.status, 409) << stale.body;
  EXPECT_EQ(GetPod("p"), before);
  // The current version is honoured although the DisruptionTarget write bumps it.
  auto current = client_->Post(std::string(kPods) + "/p/eviction", eviction(before["metadata"]["resourceVersion"]));
  ASSERT_EQ(current.status, 201) << current.body;
  EXPECT_TRUE(HasDisruptionTarget(GetPod("p")));
}

TEST_F(SubresourceTest, BindingUidAndResourceVersionArePreconditions) {
  auto created = client_->Post(kPods, Json{{"metadata", {{"name", "w"}}},
                                           {"spec", {{"containers", Json::array({{{"name", "c"}, {"image", "x"}}})}}}});
  ASSERT_EQ(created.status, 201) << created.body;
  const Json pod = created.Json();
  const std::string binding_path = std::string(kPods) + "/w/binding";
  auto binding = [](Json metadata) {
    metadata["name"] = "w";
    return Json{{"apiVersion", "v1"}, {"kind", "Binding"}, {"metadata", std::move(metadata)},
                {"target", {{"kind", "Node"}, {"name", "n1"}}}};
  };

  auto wrong_uid = client_->Post(binding_path, binding({{"uid", "not-the-uid"}}));
  ASSERT_EQ(wrong_uid.status, 409) << wrong_uid.body;
  EXPECT_EQ(wrong_uid.Reason(), "Conflict");
  EXPECT_NE(wrong_uid.Json()["message"].get<std::string>().find(
                "Precondition failed: UID in precondition: not-the-uid, UID in object meta: " +
                pod["metadata"]["uid"].get<std::string>()),
            std::string::npos)
      << wrong_uid.body;
  auto stale = client_->Post(binding_path, binding({{"uid", pod["metadata"]["uid"]}, {"resourceVersion", "1"}}));
  EXPECT_EQ(stale.status, 409) << stale.body;
  EXPECT_FALSE(GetPod("w")["spec"].contains("nodeName"));
  EXPECT_EQ(GetPod("w")["metadata"]["resourceVersion"], pod["metadata"]["resourceVersion"]);

  auto bound = client_->Post(binding_path, binding({{"uid", pod["metadata"]["uid"]},
                                                    {"resourceVersion", pod["metadata"]["resourceVersion"]}}));
  ASSERT_EQ(bound.status, 201) << bound.body;
  EXPECT_EQ(GetPod("w")["spec"]["nodeName"], "n1");
}

}  // namespace
}  // namespace phalanx::fakes::apiserver
