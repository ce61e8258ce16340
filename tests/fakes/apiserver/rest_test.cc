// The fake API server's REST semantics over raw HTTP (no client library logic in between):
// create/get/list/update, 409 on stale resourceVersions, the status subresource split, merge and
// JSON patches, selectors, pagination, binding, eviction, finalizers, scheduling gates.
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>

#include "tests/fakes/apiserver/fake_apiserver.h"
#include "tests/fakes/apiserver/raw_client.h"

namespace phalanx::fakes::apiserver {
namespace {

using json::Json;
using testing::RawClient;

constexpr const char* kPods = "/api/v1/namespaces/ml/pods";
constexpr const char* kJobs = "/apis/phalanx.io/v1alpha1/namespaces/ml/trainingjobs";
constexpr const char* kConfigMaps = "/api/v1/namespaces/ml/configmaps";

Json Pod(const std::string& name, const std::string& app = "train") {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"labels", {{"app", app}}}}},
          {"spec", {{"containers", Json::array({{{"name", "c"}, {"image", "busybox"}}})}}}};
}

Json Job(const std::string& name) {
  return {{"apiVersion", "phalanx.io/v1alpha1"},
          {"kind", "TrainingJob"},
          {"metadata", {{"name", name}}},
          {"spec", {{"replicas", 2}, {"gpusPerReplica", 8}}}};
}

uint64_t Rv(const Json& object) {
  return std::stoull(object["metadata"]["resourceVersion"].get<std::string>());
}

std::set<std::string> Names(const Json& list) {
  std::set<std::string> names;
  for (const auto& item : list["items"]) names.insert(item["metadata"]["name"].get<std::string>());
  return names;
}

class RestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto started = FakeApiServer::Start();
    ASSERT_TRUE(started.ok()) << started.status();
    server_ = std::move(started).value();
    client_ = std::make_unique<RawClient>(server_->url());
  }
  std::unique_ptr<FakeApiServer> server_;
  std::unique_ptr<RawClient> client_;
};

TEST_F(RestTest, CreateGetListAndAlreadyExists) {
  auto created = client_->Post(kPods, Pod("a"));
  ASSERT_EQ(created.status, 201) << created.body;
  const Json a = created.Json();
  EXPECT_EQ(a["metadata"]["namespace"], "ml");
  EXPECT_FALSE(a["metadata"]["uid"].get<std::string>().empty());
  EXPECT_TRUE(a["metadata"].contains("creationTimestamp"));
  EXPECT_GT(Rv(a), 0u);

  auto again = client_->Post(kPods, Pod("a"));
  EXPECT_EQ(again.status, 409);
  EXPECT_EQ(again.Reason(), "AlreadyExists");

  auto got = client_->Get(std::string(kPods) + "/a");
  ASSERT_EQ(got.status, 200);
  EXPECT_EQ(got.Json()["metadata"]["uid"], a["metadata"]["uid"]);

  auto missing = client_->Get(std::string(kPods) + "/nope");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.Reason(), "NotFound");
  EXPECT_EQ(missing.Json()["kind"], "Status");

  ASSERT_EQ(client_->Post(kPods, Pod("b")).status, 201);
  auto list = client_->Get(kPods);
  ASSERT_EQ(list.status, 200);
  const Json l = list.Json();
  EXPECT_EQ(l["kind"], "PodList");
  EXPECT_EQ(Names(l), (std::set<std::string>{"a", "b"}));
  EXPECT_GE(Rv(l), Rv(a));
  // Other namespaces and the all-namespaces list.
  EXPECT_TRUE(client_->Get("/api/v1/namespaces/other/pods").Json()["items"].empty());
  EXPECT_EQ(client_->Get("/api/v1/pods").Json()["items"].size(), 2u);
}

TEST_F(RestTest, GenerateNameGivesUniqueNames) {
  Json pod = Pod("");
  pod["metadata"].erase("name");
  pod["metadata"]["generateName"] = "w-";
  auto first = client_->Post(kPods, pod);
  auto second = client_->Post(kPods, pod);
  ASSERT_EQ(first.status, 201) << first.body;
  ASSERT_EQ(second.status, 201) << second.body;
  const std::string n1 = first.Json()["metadata"]["name"], n2 = second.Json()["metadata"]["name"];
  EXPECT_EQ(n1.rfind("w-", 0), 0u);
  EXPECT_NE(n1, n2);
}

TEST_F(RestTest, UpdateWithStaleResourceVersionIsConflict) {
  const Json created = client_->Post(kConfigMaps, Json{{"metadata", {{"name", "cfg"}}},
                                                       {"data", {{"k", "1"}}}})
                           .Json();
  Json first = created;
  first["data"]["k"] = "2";
  auto updated = client_->Put(std::string(kConfigMaps) + "/cfg", first);
  ASSERT_EQ(updated.status, 200) << updated.body;
  EXPECT_GT(Rv(updated.Json()), Rv(created));

  Json stale = created;  // still carries the first resourceVersion
  stale["data"]["k"] = "3";
  auto conflict = client_->Put(std::string(kConfigMaps) + "/cfg", stale);
  EXPECT_EQ(conflict.status, 409);
  EXPECT_EQ(conflict.Reason(), "Conflict");
  EXPECT_NE(conflict.body.find("the object has been modified"), std::string::npos) << conflict.body;
  EXPECT_EQ(client_->Get(std::string(kConfigMaps) + "/cfg").Json()["data"]["k"], "2");

  // Without a resourceVersion an update is unconditional.
  Json blind = created;
  blind["metadata"].erase("resourceVersion");
  blind["data"]["k"] = "4";
  EXPECT_EQ(client_->Put(std::string(kConfigMaps) + "/cfg", blind).status, 200);

  // A write that changes nothing keeps the version.
  const Json current = client_->Get(std::string(kConfigMaps) + "/cfg").Json();
  auto same = client_->Put(std::string(kConfigMaps) + "/cfg", current);
  ASSERT_EQ(same.status, 200);
  EXPECT_EQ(Rv(same.Json()), Rv(current));
}

TEST_F(RestTest, StatusSubresourceSplitsSpecAndStatus) {
  const Json created = client_->Post(kJobs, Job("j")).Json();
  ASSERT_EQ(created["metadata"]["generation"], 1);

  // The main resource ignores status but bumps generation on a spec change.
  Json main = created;
  main["spec"]["replicas"] = 4;
  main["status"] = {{"phase", "Running"}};
  auto m = client_->Put(std::string(kJobs) + "/j", main);
  ASSERT_EQ(m.status, 200) << m.body;
  EXPECT_EQ(m.Json()["spec"]["replicas"], 4);
  EXPECT_FALSE(m.Json().contains("status") && m.Json()["status"].contains("phase")) << m.body;
  EXPECT_EQ(m.Json()["metadata"]["generation"], 2);

  // /status ignores spec and leaves generation alone.
  Json status = m.Json();
  status["spec"]["replicas"] = 9;
  status["status"] = {{"phase", "Running"}};
  auto s = client_->Put(std::string(kJobs) + "/j/status", status);
  ASSERT_EQ(s.status, 200) << s.body;
  EXPECT_EQ(s.Json()["spec"]["replicas"], 4);
  EXPECT_EQ(s.Json()["status"]["phase"], "Running");
  EXPECT_EQ(s.Json()["metadata"]["generation"], 2);

  // Merge patch on /status, also subject to the split.
  auto p = client_->Patch(std::string(kJobs) + "/j/status",
                          R"({"spec":{"replicas":1},"status":{"phase":"Succeeded"}})",
                          "application/merge-patch+json");
  ASSERT_EQ(p.status, 200) << p.body;
  EXPECT_EQ(p.Json()["spec"]["replicas"], 4);
  EXPECT_EQ(p.Json()["status"]["phase"], "Succeeded");

  // Stale versions conflict on /status too.
  auto stale = client_->Put(std::string(kJobs) + "/j/status", status);
  EXPECT_EQ(stale.status, 409) << stale.body;
}

TEST_F(RestTest, MergeAndJsonPatch) {
  ASSERT_EQ(client_->Post(kConfigMaps, Json{{"metadata", {{"name", "cfg"}, {"labels", {{"a", "1"}, {"b", "2"}}}}},
                                            {"data", {{"k", "v"}}}})
                .status,
            201);
  const std::string path = std::string(kConfigMaps) + "/cfg";
  auto merged = client_->Patch(path, R"({"metadata":{"labels":{"a":null,"c":"3"}},"data":{"x":"y"}})",
                               "application/merge-patch+json");
  ASSERT_EQ(merged.status, 200) << merged.body;
  EXPECT_EQ(merged.Json()["metadata"]["labels"], (Json{{"b", "2"}, {"c", "3"}}));
  EXPECT_EQ(merged.Json()["data"], (Json{{"k", "v"}, {"x", "y"}}));

  auto patched = client_->Patch(
      path, R"([{"op":"test","path":"/data/k","value":"v"},{"op":"replace","path":"/data/k","value":"w"},)"
            R"({"op":"remove","path":"/data/x"},{"op":"add","path":"/metadata/annotations","value":{"n":"1"}}])",
      "application/json-patch+json");
  ASSERT_EQ(patched.status, 200) << patched.body;
  EXPECT_EQ(patched.Json()["data"], (Json{{"k", "w"}}));
  EXPECT_EQ(patched.Json()["metadata"]["annotations"]["n"], "1");

  // A failing test operation changes nothing.
  const uint64_t before = Rv(patched.Json());
  auto failed = client_->Patch(path, R"([{"op":"test","path":"/data/k","value":"nope"},)"
                                     R"({"op":"replace","path":"/data/k","value":"z"}])",
                               "application/json-patch+json");
  EXPECT_EQ(failed.status, 422) << failed.body;
  EXPECT_EQ(Rv(client_->Get(path).Json()), before);

  // A patch carrying a stale resourceVersion conflicts.
  auto stale = client_->Patch(path, R"({"metadata":{"resourceVersion":"1"},"data":{"k":"q"}})",
                              "application/merge-patch+json");
  EXPECT_EQ(stale.status, 409) << stale.body;

  EXPECT_EQ(client_->Patch(path, "{}", "text/plain").status, 415);
  EXPECT_EQ(client_->Patch(path, "{not json", "application/merge-patch+json").status, 400);
  EXPECT_EQ(client_->Patch(std::string(kConfigMaps) + "/none", "{}", "application/merge-patch+json").status,
            404);
}

TEST_F(RestTest, LabelAndFieldSelectors) {
  for (auto [name, app] : {std::pair{"a", "train"}, {"b", "serve"}, {"c", "train"}}) {
    ASSERT_EQ(client_->Post(kPods, Pod(name, app)).status, 201);
  }
  Json unlabelled = Pod("d");
  unlabelled["metadata"].erase("labels");
  ASSERT_EQ(client_->Post(kPods, unlabelled).status, 201);
  ASSERT_EQ(client_->Post(std::string(kPods) + "/a/binding",
                          Json{{"apiVersion", "v1"}, {"kind", "Binding"},
                               {"metadata", {{"name", "a"}}}, {"target", {{"kind", "Node"}, {"name", "n1"}}}})
                .status,
            201);
  auto names = [&](const std::string& query) { return Names(client_->Get(std::string(kPods) + "?" + query).Json()); };
  using S = std::set<std::string>;
  EXPECT_EQ(names("labelSelector=app%3Dtrain"), (S{"a", "c"}));
  EXPECT_EQ(names("labelSelector=app!%3Dtrain"), (S{"b", "d"}));
  EXPECT_EQ(names("labelSelector=app%20in%20(serve,other)"), (S{"b"}));
  EXPECT_EQ(names("labelSelector=!app"), (S{"d"}));
  EXPECT_EQ(names("labelSelector=app"), (S{"a", "b", "c"}));
  EXPECT_EQ(names("fieldSelector=spec.nodeName%3Dn1"), (S{"a"}));
  EXPECT_EQ(names("fieldSelector=spec.nodeName%3D"), (S{"b", "c", "d"}));
  EXPECT_EQ(names("fieldSelector=metadata.name%3Db"), (S{"b"}));
  EXPECT_EQ(names("fieldSelector=metadata.name!%3Db,spec.nodeName%3D&labelSelector=app"), (S{"c"}));
  EXPECT_EQ(client_->Get(std::string(kPods) + "?labelSelector=app%20in%20(").status, 400);
}

TEST_F(RestTest, PaginatedListIsConsistent) {
  for (int i = 0; i < 5; ++i) ASSERT_EQ(client_->Post(kPods, Pod("p" + std::to_string(i))).status, 201);
  auto first = client_->Get(std::string(kPods) + "?limit=2");
  ASSERT_EQ(first.status, 200);
  const Json page1 = first.Json();
  ASSERT_EQ(page1["items"].size(), 2u);
  const std::string token = page1["metadata"]["continue"];
  ASSERT_FALSE(token.empty());
  // A write between pages is not seen: the list is a snapshot at the first page's version.
  ASSERT_EQ(client_->Post(kPods, Pod("p9")).status, 201);
  std::set<std::string> seen = Names(page1);
  std::string next = token;
  while (!next.empty()) {
    const Json page = client_->Get(std::string(kPods) + "?limit=2&continue=" + next).Json();
    for (const auto& n : Names(page)) EXPECT_TRUE(seen.insert(n).second) << "duplicate " << n;
    next = page["metadata"].value("continue", std::string());
  }
  EXPECT_EQ(seen, (std::set<std::string>{"p0", "p1", "p2", "p3", "p4"}));
}

TEST_F(RestTest, BindingSetsNodeNameOnce) {
  ASSERT_EQ(client_->Post(kPods, Pod("w")).status, 201);
  const Json binding = {{"apiVersion", "v1"}, {"kind", "Binding"},
                        {"metadata", {{"name", "w"}, {"annotations", {{"phalanx.io/devices", "0,1"}}}}},
                        {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", "n1"}}}};
  auto bound = client_->Post(std::string(kPods) + "/w/binding", binding);
  ASSERT_EQ(bound.status, 201) << bound.body;
  EXPECT_EQ(bound.Json()["status"], "Success");
  const Json pod = client_->Get(std::string(kPods) + "/w").Json();
  EXPECT_EQ(pod["spec"]["nodeName"], "n1");
  EXPECT_EQ(pod["metadata"]["annotations"]["phalanx.io/devices"], "0,1");
  bool scheduled = false;
  for (const auto& c : pod["status"]["conditions"]) {
    scheduled |= c["type"] == "PodScheduled" && c["status"] == "True";
  }
  EXPECT_TRUE(scheduled) << pod.dump();

  Json other = binding;
  other["target"]["name"] = "n2";
  auto second = client_->Post(std::string(kPods) + "/w/binding", other);
  EXPECT_EQ(second.status, 409) << second.body;
  EXPECT_EQ(client_->Get(std::string(kPods) + "/w").Json()["spec"]["nodeName"], "n1");
  EXPECT_EQ(client_->Post(std::string(kPods) + "/none/binding", binding).status, 404);
}

TEST_F(RestTest, SchedulingGatesOnlyShrinkAndBlockBinding) {
  Json gated = Pod("g");
  gated["spec"]["schedulingGates"] = Json::array({{{"name", "phalanx.io/gang"}}, {{"name", "other"}}});
  const Json created = client_->Post(kPods, gated).Json();
  const Json binding = {{"metadata", {{"name", "g"}}}, {"target", {{"kind", "Node"}, {"name", "n1"}}}};
  EXPECT_NE(client_->Post(std::string(kPods) + "/g/binding", binding).status, 201);

  Json grow = created;
  grow["spec"]["schedulingGates"].push_back({{"name", "third"}});
  auto grown = client_->Put(std::string(kPods) + "/g", grow);
  EXPECT_EQ(grown.status, 422) << grown.body;

  Json shrink = created;
  shrink["spec"]["schedulingGates"] = Json::array({{{"name", "other"}}});
  ASSERT_EQ(client_->Put(std::string(kPods) + "/g", shrink).status, 200);
  auto cleared = client_->Patch(std::string(kPods) + "/g", R"({"spec":{"schedulingGates":null}})",
                                "application/merge-patch+json");
  ASSERT_EQ(cleared.status, 200) << cleared.body;
  EXPECT_FALSE(cleared.Json()["spec"].contains("schedulingGates"));
  EXPECT_EQ(client_->Post(std::string(kPods) + "/g/binding", binding).status, 201);

  // Other spec fields of a pod are immutable.
  Json changed = client_->Get(std::string(kPods) + "/g").Json();
  changed["spec"]["containers"][0]["name"] = "renamed";
  EXPECT_EQ(client_->Put(std::string(kPods) + "/g", changed).status, 422);
}

TEST_F(RestTest, EvictionAddsDisruptionTargetAndDeletes) {
  ASSERT_EQ(client_->Post(kPods, Pod("e")).status, 201);
  auto evicted = client_->Post(std::string(kPods) + "/e/eviction",
                               Json{{"apiVersion", "policy/v1"}, {"kind", "Eviction"},
                                    {"metadata", {{"name", "e"}, {"namespace", "ml"}}}});
  ASSERT_EQ(evicted.status, 201) << evicted.body;
  // Unbound: gone at once. The DELETED state carried the condition.
  EXPECT_EQ(client_->Get(std::string(kPods) + "/e").status, 404);
  EXPECT_EQ(client_->Post(std::string(kPods) + "/e/eviction", Json{{"metadata", {{"name", "e"}}}}).status, 404);
}

TEST_F(RestTest, BoundPodDeletionWaitsForGraceZero) {
  ASSERT_EQ(client_->Post(kPods, Pod("r")).status, 201);
  ASSERT_EQ(client_->Post(std::string(kPods) + "/r/binding",
                          Json{{"metadata", {{"name", "r"}}}, {"target", {{"kind", "Node"}, {"name", "n1"}}}})
                .status,
            201);
  auto evicted = client_->Post(std::string(kPods) + "/r/eviction", Json{{"metadata", {{"name", "r"}}}});
  ASSERT_EQ(evicted.status, 201) << evicted.body;
  // A bound pod stays, terminating, with the DisruptionTarget condition, until the "kubelet"
  // deletes it with grace 0.
  const Json terminating = client_->Get(std::string(kPods) + "/r").Json();
  ASSERT_TRUE(terminating["metadata"].contains("deletionTimestamp")) << terminating.dump();
  bool disruption = false;
  for (const auto& c : terminating["status"]["conditions"]) {
    disruption |= c["type"] == "DisruptionTarget" && c["status"] == "True";
  }
  EXPECT_TRUE(disruption) << terminating.dump();
  EXPECT_EQ(client_->Get(std::string(kPods) + "?fieldSelector=metadata.name%3Dr").Json()["items"].size(), 1u);

  auto gone = client_->Send("DELETE", std::string(kPods) + "/r?gracePeriodSeconds=0");
  ASSERT_EQ(gone.status, 200) << gone.body;
  EXPECT_EQ(client_->Get(std::string(kPods) + "/r").status, 404);
}

TEST_F(RestTest, FinalizersKeepObjectUntilRemoved) {
  ASSERT_EQ(client_->Post(kJobs, [] {
                  Json j = Job("f");
                  j["metadata"]["finalizers"] = Json::array({"phalanx.io/cleanup"});
                  return j;
                }())
                .status,
            201);
  const std::string path = std::string(kJobs) + "/f";
  auto deleted = client_->Delete(path);
  ASSERT_EQ(deleted.status, 200) << deleted.body;
  EXPECT_TRUE(deleted.Json()["metadata"].contains("deletionTimestamp")) << deleted.body;

  const Json terminating = client_->Get(path).Json();
  ASSERT_TRUE(terminating["metadata"].contains("deletionTimestamp"));
  // Deleting again is accepted and changes nothing.
  EXPECT_EQ(client_->Delete(path).status, 200);
  EXPECT_EQ(Rv(client_->Get(path).Json()), Rv(terminating));
  // New finalizers cannot be added to a terminating object... but removing the last one frees it.
  auto removed = client_->Patch(path, R"({"metadata":{"finalizers":null}})", "application/merge-patch+json");
  ASSERT_EQ(removed.status, 200) << removed.body;
  EXPECT_EQ(client_->Get(path).status, 404);
}

TEST_F(RestTest, DeletePreconditionsAndOwnerCascade) {
  const Json owner = client_->Post(kJobs, Job("owner")).Json();
  Json dependent = Pod("dep");
  dependent["metadata"]["ownerReferences"] =
      Json::array({{{"apiVersion", "phalanx.io/v1alpha1"}, {"kind", "TrainingJob"}, {"name", "owner"},
                    {"uid", owner["metadata"]["uid"]}, {"controller", true}}});
  ASSERT_EQ(client_->Post(kPods, dependent).status, 201);

  auto wrong_uid = client_->Delete(std::string(kJobs) + "/owner",
                                   Json{{"preconditions", {{"uid", "not-the-uid"}}}});
  EXPECT_EQ(wrong_uid.status, 409) << wrong_uid.body;

  auto deleted = client_->Delete(std::string(kJobs) + "/owner", Json{{"propagationPolicy", "Background"}});
  ASSERT_EQ(deleted.status, 200) << deleted.body;
  EXPECT_EQ(deleted.Json()["kind"], "Status");
  EXPECT_EQ(client_->Get(std::string(kJobs) + "/owner").status, 404);
  // The unbound dependent pod goes with it.
  ASSERT_TRUE(server_->WaitForGone("pods", "ml", "dep").ok());
}

TEST_F(RestTest, CustomResourceServedOnceItsCrdExists) {
  const std::string widgets = "/apis/example.com/v1/namespaces/ml/widgets";
  EXPECT_EQ(client_->Get(widgets).status, 404);
  const Json crd = {
      {"apiVersion", "apiextensions.k8s.io/v1"},
      {"kind", "CustomResourceDefinition"},
      {"metadata", {{"name", "widgets.example.com"}}},
      {"spec",
       {{"group", "example.com"},
        {"scope", "Namespaced"},
        {"names", {{"plural", "widgets"}, {"kind", "Widget"}}},
        {"versions", Json::array({{{"name", "v1"}, {"served", true}, {"storage", true},
                                   {"subresources", {{"status", Json::object()}}}}})}}}};
  auto created = client_->Post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd);
  ASSERT_EQ(created.status, 201) << created.body;
  auto widget = client_->Post(widgets, Json{{"apiVersion", "example.com/v1"}, {"kind", "Widget"},
                                            {"metadata", {{"name", "w"}}}, {"spec", {{"size", 1}}}});
  ASSERT_EQ(widget.status, 201) << widget.body;
  EXPECT_EQ(client_->Get(widgets).Json()["kind"], "WidgetList");
}

TEST_F(RestTest, InjectedFaultsAnswerWithStatus) {
  FaultRule rule;
  rule.verb = "list";
  rule.path_contains = "/pods";
  rule.code = 429;
  rule.retry_after_seconds = 2;
  rule.count = 1;
  server_->FailNext(rule);
  auto throttled = client_->Get(kPods);
  EXPECT_EQ(throttled.status, 429);
  EXPECT_EQ(kube::FindHeader(throttled.headers, "Retry-After"), "2");
  EXPECT_EQ(client_->Get(kPods).status, 200);  // count consumed
}

}  // namespace
}  // namespace phalanx::fakes::apiserver
