// CRD schema validation in the fake (crd_schema.h) with the CRD Phalanx ships: the GpuQueue
// CRD (manifests/crds/phalanx.io_gpuqueues.yaml) created over HTTP, then objects the real API
// server would refuse get a 422 naming the field, and the ones it accepts are stored.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>

#include "tests/fakes/apiserver/crd_schema.h"
#include "tests/fakes/apiserver/fake_apiserver.h"
#include "tests/fakes/apiserver/patch.h"
#include "tests/fakes/apiserver/raw_client.h"

namespace phalanx::fakes::apiserver {
namespace {

using json::Json;
using testing::RawClient;

constexpr const char* kQueues = "/apis/phalanx.io/v1alpha1/gpuqueues";

Json ShippedCrd(const std::string& file) {
  std::ifstream in(std::string(PHALANX_TEST_SOURCE_DIR) + "/manifests/crds/" + file);
  std::stringstream text;
  text << in.rdbuf();
  auto crd = YamlToJson(text.str());
  EXPECT_TRUE(crd.ok()) << crd.status();
  return crd.ok() ? *crd : Json();
}

Json Queue(const std::string& name, Json quota) {
  return Json{{"apiVersion", "phalanx.io/v1alpha1"},
              {"kind", "GpuQueue"},
              {"metadata", {{"name", name}}},
              {"spec", {{"cohort", "lab"}, {"quotas", Json::array({quota})}}}};
}

class CrdSchemaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto started = FakeApiServer::Start();
    ASSERT_TRUE(started.ok()) << started.status();
    server_ = std::move(started).value();
    client_ = std::make_unique<RawClient>(server_->url());
    auto created = client_->Post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                                 ShippedCrd("phalanx.io_gpuqueues.yaml"));
    ASSERT_EQ(created.status, 201) << created.body;
  }
  std::unique_ptr<FakeApiServer> server_;
  std::unique_ptr<RawClient> client_;
};

TEST_F(CrdSchemaTest, GpuQuantitiesTakeAtMostThreeDecimals) {
  // Accepted: whole GPUs (an integer: a double for CEL), milli-GPUs, and 0.007 (7.000000000000001
  // milli-GPUs in floating point: within the rule's tolerance, like the extender's parser).
  int n = 0;
  for (const Json& nominal : {Json(8), Json(0.125), Json(0.007), Json(2.5), Json(0)}) {
    auto ok = client_->Post(kQueues, Queue("ok-" + std::to_string(n++), {{"pool", "H100"}, {"nominal", nominal}}));
    EXPECT_EQ(ok.status, 201) << nominal.dump() << ": " << ok.body;
  }
  // Four decimals: 422 Invalid naming the field, nothing stored.
  auto bad = client_->Post(kQueues, Queue("four", {{"pool", "H100"}, {"nominal", 0.0015}}));
  ASSERT_EQ(bad.status, 422) << bad.body;
  const Json status = bad.Json();
  EXPECT_EQ(status["reason"], "Invalid");
  EXPECT_EQ(status["message"],
            "GpuQueue.phalanx.io \"four\" is invalid: spec.quotas[0].nominal: Invalid value: \"number\": at most 3 "
            "decimals (milli-GPUs)");
  ASSERT_EQ(status["details"]["causes"].size(), 1u) << status.dump();
  EXPECT_EQ(status["details"]["causes"][0]["field"], "spec.quotas[0].nominal");
  EXPECT_EQ(client_->Get(std::string(kQueues) + "/four").status, 404);
  // The limits too; every failing field is named at once.
  auto limits = client_->Post(kQueues, Queue("limits", {{"pool", "H100"}, {"nominal", 8}, {"borrowingLimit", 1.0001},
                                                         {"lendingLimit", 0.12345}}));
  ASSERT_EQ(limits.status, 422) << limits.body;
  EXPECT_NE(limits.body.find("spec.quotas[0].borrowingLimit: Invalid value"), std::string::npos) << limits.body;
  EXPECT_NE(limits.body.find("spec.quotas[0].lendingLimit: Invalid value"), std::string::npos) << limits.body;
  // An update (merge patch) to four decimals is refused and changes nothing.
  auto patch = client_->Patch(std::string(kQueues) + "/ok-0", R"({"spec":{"quotas":[{"pool":"H100","nominal":1.2345}]}})",
                              "application/merge-patch+json");
  EXPECT_EQ(patch.status, 422) << patch.body;
  EXPECT_EQ(client_->Get(std::string(kQueues) + "/ok-0").Json()["spec"]["quotas"][0]["nominal"], 8);
}

TEST_F(CrdSchemaTest, OpenApiKeywordsAndTheOtherRulesOfTheShippedCrd) {
  struct Case {
    const char* what;
    Json spec;
    const char* names;
  };
  for (const Case& c : {
           Case{"negative quota", {{"quotas", Json::array({{{"pool", "H100"}, {"nominal", -1}}})}},
                "spec.quotas[0].nominal: Invalid value: -1: spec.quotas[0].nominal in body should be greater than or equal to 0"},
           Case{"quota beyond the maximum", {{"quotas", Json::array({{{"pool", "H100"}, {"nominal", 2e9}}})}},
                "spec.quotas[0].nominal: Invalid value: 2000000000"},
           Case{"quota without nominal", {{"quotas", Json::array({{{"pool", "H100"}}})}}, "spec.quotas[0].nominal: Required value"},
           Case{"quota as a string", {{"quotas", Json::array({{{"pool", "H100"}, {"nominal", "lots"}}})}},
                "spec.quotas[0].nominal: Invalid value: \"string\": spec.quotas[0].nominal in body must be of type number"},
           Case{"cohort not a DNS label", {{"cohort", "Lab_1"}}, "spec.cohort: Invalid value: \"Lab_1\": spec.cohort in body should match"},
           Case{"lending beyond nominal", {{"quotas", Json::array({{{"pool", "H100"}, {"nominal", 4}, {"lendingLimit", 5}}})}},
                "spec.quotas[0]: Invalid value: \"object\": lendingLimit must not exceed nominal"},
           Case{"child with a cohort", {{"parent", "org"}, {"cohort", "lab"}},
                "spec: Invalid value: \"object\": a child queue shares with its siblings; set the cohort on its parent"},
           Case{"own parent", {{"parent", "self-ref"}}, "<nil>: Invalid value: \"object\": a queue cannot be its own parent"},
           Case{"Exists with values",
                {{"namespaceSelector", {{"matchExpressions", Json::array({{{"key", "team"}, {"operator", "Exists"}, {"values", {"a"}}}})}}}},
                "spec.namespaceSelector.matchExpressions[0]: Invalid value: \"object\": In and NotIn need values"},
           Case{"unknown operator",
                {{"namespaceSelector", {{"matchExpressions", Json::array({{{"key", "team"}, {"operator", "Near"}}})}}}},
                "spec.namespaceSelector.matchExpressions[0].operator: Unsupported value: \"Near\""},
       }) {
    SCOPED_TRACE(c.what);
    Json q = {{"apiVersion", "phalanx.io/v1alpha1"}, {"kind", "GpuQueue"}, {"metadata", {{"name", "self-ref"}}}, {"spec", c.spec}};
    auto r = client_->Post(kQueues, q);
    EXPECT_EQ(r.status, 422) << r.body;
    EXPECT_NE(r.Json().value("message", "").find(c.names), std::string::npos) << r.body;
  }
}

TEST_F(CrdSchemaTest, StatusWritesAreCheckedAgainstTheStatusSchema) {
  ASSERT_EQ(client_->Post(kQueues, Queue("team-a", {{"pool", "H100"}, {"nominal", 8}})).status, 201);
  const std::string status_path = std::string(kQueues) + "/team-a/status";
  const Json condition = {{"type", "Active"}, {"status", "True"}, {"reason", "Enforced"}, {"message", "ok"},
                          {"lastTransitionTime", "2026-11-26T10:00:00Z"}, {"observedGeneration", 1}};
  auto ok = client_->Patch(status_path,
                           Json{{"status", {{"pendingGangs", 1}, {"conditions", Json::array({condition})}}}}.dump(),
                           "application/merge-patch+json");
  EXPECT_EQ(ok.status, 200) << ok.body;
  Json bad_condition = condition;
  bad_condition["status"] = "Yes";
  bad_condition.erase("reason");
  auto bad = client_->Patch(status_path, Json{{"status", {{"conditions", Json::array({bad_condition})}}}}.dump(),
                            "application/merge-patch+json");
  ASSERT_EQ(bad.status, 422) << bad.body;
  EXPECT_NE(bad.body.find("status.conditions[0].reason: Required value"), std::string::npos) << bad.body;
  EXPECT_NE(bad.body.find("status.conditions[0].status: Unsupported value: \\\"Yes\\\""), std::string::npos) << bad.body;
  auto negative = client_->Patch(status_path, R"({"status":{"pendingGangs":-1}})", "application/merge-patch+json");
  EXPECT_EQ(negative.status, 422) << negative.body;
  EXPECT_EQ(client_->Get(std::string(kQueues) + "/team-a").Json()["status"]["pendingGangs"], 1);
}

// The fake evaluates every CEL rule the shipped CRDs use: a rule edited in the CRD without
// teaching the fake fails here instead of going unchecked in every other test.
TEST(CrdSchemaRules, EveryRuleOfTheShippedGpuQueueCrdIsKnownToTheFake) {
  std::function<void(const Json&, int*)> walk = [&](const Json& node, int* count) {
    if (node.is_object()) {
      for (const auto& [key, value] : node.items()) {
        if (key == "x-kubernetes-validations" && value.is_array()) {
          for (const Json& rule : value) {
            ++*count;
            EXPECT_TRUE(IsKnownCelRule(rule.value("rule", ""))) << "the fake does not evaluate: " << rule.dump();
          }
        } else {
          walk(value, count);
        }
      }
    } else if (node.is_array()) {
      for (const Json& v : node) walk(v, count);
    }
  };
  int rules = 0;
  walk(ShippedCrd("phalanx.io_gpuqueues.yaml"), &rules);
  EXPECT_EQ(rules, 7) << "a rule added to the CRD: add it to KnownRules() in crd_schema.cc";
}

// A real API server serves and validates with a CRD's new schema as soon as the update is stored
// (what `phalanx-operator apply-crds` relies on during helm upgrade), and refuses what it never
// allows: changing the group, scope or plural, or dropping a version objects are stored in.
TEST_F(CrdSchemaTest, ACrdUpdateValidatesWithItsNewSchemaAndKeepsItsIdentity) {
  const std::string crd_path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gpuqueues.phalanx.io";
  ASSERT_EQ(client_->Post(kQueues, Queue("before", {{"pool", "H100"}, {"nominal", 8}})).status, 201);
  Json crd = client_->Get(crd_path).Json();
  ASSERT_EQ(crd["status"]["storedVersions"], Json::array({"v1alpha1"})) << crd["status"].dump();
  Json& cohort = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["cohort"];
  ASSERT_TRUE(cohort.is_object()) << crd.dump();
  cohort["maxLength"] = 2;
  auto updated = client_->Put(crd_path, crd);
  ASSERT_EQ(updated.status, 200) << updated.body;
  EXPECT_EQ(updated.Json()["metadata"]["generation"], 2);
  auto refused = client_->Post(kQueues, Queue("after", {{"pool", "H100"}, {"nominal", 8}}));  // cohort "lab"
  EXPECT_EQ(refused.status, 422) << refused.body;
  EXPECT_NE(refused.body.find("spec.cohort"), std::string::npos) << refused.body;

  for (const auto& [what, field, value] :
       {std::tuple{"group", "/spec/group", Json("example.com")}, std::tuple{"scope", "/spec/scope", Json("Namespaced")},
        std::tuple{"plural", "/spec/names/plural", Json("queues")}}) {
    Json changed = client_->Get(crd_path).Json();
    changed[Json::json_pointer(field)] = value;
    auto r = client_->Put(crd_path, changed);
    EXPECT_EQ(r.status, 422) << what << ": " << r.body;
    EXPECT_NE(r.body.find("field is immutable"), std::string::npos) << r.body;
  }
  Json renamed = client_->Get(crd_path).Json();
  renamed["spec"]["versions"][0]["name"] = "v1beta1";
  auto dropped = client_->Put(crd_path, renamed);
  EXPECT_EQ(dropped.status, 422) << dropped.body;
  EXPECT_NE(dropped.Json().value("message", "").find(
                "status.storedVersions[0]: Invalid value: \"v1alpha1\": must appear in spec.versions"),
            std::string::npos)
      << dropped.body;
  EXPECT_EQ(client_->Get(std::string(kQueues) + "/before").status, 200);
}

// Server-side apply: a field a manager applied before and no longer applies is removed; fields
// another manager wrote stay (patch.h RemoveDroppedFields).
TEST_F(CrdSchemaTest, ApplyRemovesWhatTheSameManagerStoppedApplying) {
  const std::string path = "/api/v1/namespaces/default/configmaps/settings";
  const auto apply = [&](const std::string& manager, const std::string& yaml) {
    return client_->Patch(path + "?fieldManager=" + manager + "&force=true", yaml, "application/apply-patch+yaml");
  };
  const std::string head = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n";
  ASSERT_EQ(apply("release", head + "data:\n  a: \"1\"\n  b: \"2\"\n").status, 201);
  ASSERT_EQ(apply("operator", head + "data:\n  c: \"3\"\n").status, 200);
  auto second = apply("release", head + "data:\n  a: \"10\"\n");
  ASSERT_EQ(second.status, 200) << second.body;
  EXPECT_EQ(second.Json()["data"], (Json{{"a", "10"}, {"c", "3"}})) << second.body;
}

}  // namespace
}  // namespace phalanx::fakes::apiserver
