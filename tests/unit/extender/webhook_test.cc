// The gang-gate admission webhook's decision (extender/webhook/webhook.h) on AdmissionReview v1
// documents shaped as kube-apiserver sends them (admission.k8s.io/v1 schema), and its flags
// (extender/webhook/webhook_server.h).
#include "extender/webhook/webhook.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/json/json.h"
#include "core/kube/config.h"
#include "extender/webhook/webhook_server.h"

namespace phalanx::extender {
namespace {

using json::Json;

// A Pod CREATE review as the API server sends it after defaulting (schedulerName filled in).
Json PodCreateReview() {
  return Json::parse(R"({
    "apiVersion": "admission.k8s.io/v1",
    "kind": "AdmissionReview",
    "request": {
      "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
      "kind": {"group": "", "version": "v1", "kind": "Pod"},
      "resource": {"group": "", "version": "v1", "resource": "pods"},
      "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
      "requestResource": {"group": "", "version": "v1", "resource": "pods"},
      "namespace": "ml",
      "operation": "CREATE",
      "userInfo": {"username": "alice", "uid": "4b1f", "groups": ["system:authenticated"]},
      "object": {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
          "name": "llama-0",
          "namespace": "ml",
          "labels": {"phalanx.io/gang": "llama-pretrain", "app": "llama"},
          "annotations": {"phalanx.io/gang-min-members": "4"}
        },
        "spec": {
          "schedulerName": "phalanx-scheduler",
          "priorityClassName": "phalanx-standard",
          "containers": [{"name": "trainer", "image": "trainer:1",
                          "resources": {"limits": {"nvidia.com/gpu": "8"}}}],
          "restartPolicy": "Never",
          "enableServiceLinks": true
        }
      },
      "oldObject": null,
      "dryRun": false,
      "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}
    }
  })");
}

WebhookReply Review(const Json& review, WebhookOptions options = {}) {
  return ReviewPodAdmission(json::Dump(review), options);
}

// The response's patch applied to the request's object (what the API server does), or the
// object unchanged when there is no patch.
Json Mutated(const Json& review, const WebhookReply& reply) {
  Json out = Json::parse(reply.body);
  const Json& response = out["response"];
  Json object = review["request"]["object"];
  if (!response.contains("patch")) return object;
  EXPECT_EQ(response["patchType"], "JSONPatch");
  auto patch = kube::Base64Decode(response["patch"].get<std::string>());
  EXPECT_TRUE(patch.ok()) << patch.status().message();
  return object.patch(Json::parse(*patch));
}

void ExpectAllowedFor(const WebhookReply& reply, std::string_view uid) {
  ASSERT_EQ(reply.status, 200) << reply.body;
  Json out = Json::parse(reply.body);
  EXPECT_EQ(out["apiVersion"], "admission.k8s.io/v1");
  EXPECT_EQ(out["kind"], "AdmissionReview");
  EXPECT_EQ(out["response"]["uid"], uid);
  EXPECT_EQ(out["response"]["allowed"], true);
}

void ExpectUnchanged(const Json& review, WebhookOptions options = {}) {
  WebhookReply reply = Review(review, options);
  ExpectAllowedFor(reply, review["request"]["uid"].get<std::string>());
  EXPECT_FALSE(reply.patched);
  EXPECT_FALSE(Json::parse(reply.body)["response"].contains("patch")) << reply.body;
  EXPECT_FALSE(Json::parse(reply.body)["response"].contains("patchType")) << reply.body;
}

TEST(WebhookTest, GangPodWithoutGatesGetsTheGangGate) {
  const Json review = PodCreateReview();
  WebhookReply reply = Review(review);
  ExpectAllowedFor(reply, "705ab4f5-6393-11e8-b7cc-42010a800002");
  EXPECT_TRUE(reply.patched);
  Json pod = Mutated(review, reply);
  EXPECT_EQ(pod["spec"]["schedulingGates"], Json::parse(R"([{"name":"phalanx.io/gang"}])"));
  // Nothing else changes.
  pod["spec"].erase("schedulingGates");
  EXPECT_EQ(pod, review["request"]["object"]);
}

TEST(WebhookTest, OtherGatesAreKeptAndTheGangGateAppended) {
  Json review = PodCreateReview();
  review["request"]["object"]["spec"]["schedulingGates"] = Json::parse(R"([{"name":"example.com/quota"}])");
  WebhookReply reply = Review(review);
  ExpectAllowedFor(reply, "705ab4f5-6393-11e8-b7cc-42010a800002");
  EXPECT_EQ(Mutated(review, reply)["spec"]["schedulingGates"],
            Json::parse(R"([{"name":"example.com/quota"},{"name":"phalanx.io/gang"}])"));

  review["request"]["object"]["spec"]["schedulingGates"] = Json::array();
  reply = Review(review);
  EXPECT_EQ(Mutated(review, reply)["spec"]["schedulingGates"], Json::parse(R"([{"name":"phalanx.io/gang"}])"));
}

TEST(WebhookTest, AliasLabelIsAGangMemberToo) {
  Json review = PodCreateReview();
  review["request"]["object"]["metadata"]["labels"] = {{"scheduling.x-k8s.io/pod-group", "llama-pretrain"}};
  WebhookReply reply = Review(review);
  EXPECT_TRUE(reply.patched) << reply.body;
  EXPECT_EQ(Mutated(review, reply)["spec"]["schedulingGates"][0]["name"], "phalanx.io/gang");
}

// A pod outside any gang naming a team queue and requesting whole GPUs is an implicit gang of
// one (k8s_objects.h FormsImplicitGang): gated, so that its queue's quota admits it.
TEST(WebhookTest, AQueueLabelledSingleGpuPodIsGatedAsAnImplicitGang) {
  Json review = PodCreateReview();
  review["request"]["object"]["metadata"]["labels"] = {{"phalanx.io/queue", "team-a"}, {"app", "notebook"}};
  // Created through generateName: no name yet at admission; the gate does not need one.
  review["request"]["object"]["metadata"].erase("name");
  review["request"]["object"]["metadata"]["generateName"] = "notebook-";
  WebhookReply reply = Review(review);
  ExpectAllowedFor(reply, "705ab4f5-6393-11e8-b7cc-42010a800002");
  EXPECT_TRUE(reply.patched) << reply.body;
  EXPECT_EQ(Mutated(review, reply)["spec"]["schedulingGates"], Json::parse(R"([{"name":"phalanx.io/gang"}])"));
  // A GPU requested by an init container only counts too (the effective request).
  Json init = review;
  init["request"]["object"]["spec"]["initContainers"] =
      Json::parse(R"([{"name":"warm","resources":{"limits":{"nvidia.com/gpu":"1"}}}])");
  init["request"]["object"]["spec"]["containers"][0]["resources"] = Json::object();
  EXPECT_TRUE(Review(init).patched) << Review(init).body;
}

TEST(WebhookTest, QueueLabelledPodsThatAreNoImplicitGangAreLeftAlone) {
  Json queued = PodCreateReview();
  queued["request"]["object"]["metadata"]["labels"] = {{"phalanx.io/queue", "team-a"}};
  {
    SCOPED_TRACE("CPU only");
    Json review = queued;
    review["request"]["object"]["spec"]["containers"][0]["resources"] = {{"limits", {{"cpu", "4"}}}};
    ExpectUnchanged(review);
  }
  {
    SCOPED_TRACE("a MIG device");
    Json review = queued;
    review["request"]["object"]["spec"]["containers"][0]["resources"] = {{"limits", {{"nvidia.com/mig-3g.40gb", "1"}}}};
    ExpectUnchanged(review);
  }
  {
    SCOPED_TRACE("whole GPUs and a MIG device");
    Json review = queued;
    review["request"]["object"]["spec"]["containers"][0]["resources"] =
        {{"limits", {{"nvidia.com/gpu", "1"}, {"nvidia.com/mig-1g.10gb", "1"}}}};
    ExpectUnchanged(review);
  }
  {
    SCOPED_TRACE("an empty queue label");
    Json review = queued;
    review["request"]["object"]["metadata"]["labels"]["phalanx.io/queue"] = "";
    ExpectUnchanged(review);
  }
  {
    SCOPED_TRACE("no queue label");
    Json review = queued;
    review["request"]["object"]["metadata"]["labels"] = {{"app", "x"}};
    ExpectUnchanged(review);
  }
  {
    SCOPED_TRACE("a malformed GPU quantity: left to the API server's validation");
    Json review = queued;
    review["request"]["object"]["spec"]["containers"][0]["resources"] = {{"limits", {{"nvidia.com/gpu", "1.5"}}}};
    ExpectUnchanged(review);
  }
  {
    SCOPED_TRACE("another scheduler's pod");
    Json review = queued;
    review["request"]["object"]["spec"]["schedulerName"] = "default-scheduler";
    ExpectUnchanged(review);
  }
}

// A gang pod that also names a queue is gated once, as a gang member; a second review of it
// (the third webhook entry never sees it: its objectSelector excludes gang labels, but a
// reinvocation would) finds the gate and adds nothing.
TEST(WebhookTest, AQueueLabelledGangPodIsGatedOnceAsAGangMember) {
  Json review = PodCreateReview();
  review["request"]["object"]["metadata"]["labels"]["phalanx.io/queue"] = "team-a";
  WebhookReply reply = Review(review);
  ASSERT_TRUE(reply.patched) << reply.body;
  const Json pod = Mutated(review, reply);
  EXPECT_EQ(pod["spec"]["schedulingGates"].size(), 1u);
  Json again = review;
  again["request"]["object"] = pod;
  ExpectUnchanged(again);
}

TEST(WebhookTest, PodsThatMustNotBeGatedAreLeftAlone) {
  {
    SCOPED_TRACE("already gated");
    Json review = PodCreateReview();
    review["request"]["object"]["spec"]["schedulingGates"] =
        Json::parse(R"([{"name":"example.com/quota"},{"name":"phalanx.io/gang"}])");
    ExpectUnchanged(review);
  }
  {
    SCOPED_TRACE("no labels");
    Json review = PodCreateReview();
    review["request"]["object"]["metadata"].erase("labels");
    ExpectUnchanged(review);
  }
  {
    SCOPED_TRACE("empty gang label (the extender reads it as no gang, alias ignored)");
    Json review = PodCreateReview();
    review["request"]["object"]["metadata"]["labels"] = {{"phalanx.io/gang", ""},
                                                          {"scheduling.x-k8s.io/pod-group", "g"}};
    ExpectUnchanged(review);
  }
  {
    SCOPED_TRACE("another scheduler: nobody would lift the gate");
    Json review = PodCreateReview();
    review["request"]["object"]["spec"]["schedulerName"] = "default-scheduler";
    ExpectUnchanged(review);
    review["request"]["object"]["spec"].erase("schedulerName");
    ExpectUnchanged(review);
  }
  {
    SCOPED_TRACE("created bound: the API server rejects gates with spec.nodeName");
    Json review = PodCreateReview();
    review["request"]["object"]["spec"]["nodeName"] = "gpu-1";
    ExpectUnchanged(review);
  }
  {
    SCOPED_TRACE("UPDATE: gates can only be removed after creation");
    Json review = PodCreateReview();
    review["request"]["operation"] = "UPDATE";
    review["request"]["oldObject"] = review["request"]["object"];
    review["request"]["options"] = {{"apiVersion", "meta.k8s.io/v1"}, {"kind", "UpdateOptions"}};
    ExpectUnchanged(review);
  }
  {
    SCOPED_TRACE("DELETE: no object");
    Json review = PodCreateReview();
    review["request"]["operation"] = "DELETE";
    review["request"]["oldObject"] = review["request"]["object"];
    review["request"]["object"] = nullptr;
    ExpectUnchanged(review);
  }
  {
    SCOPED_TRACE("CREATE of a subresource (pods/binding)");
    Json review = PodCreateReview();
    review["request"]["subResource"] = "binding";
    review["request"]["kind"] = {{"group", ""}, {"version", "v1"}, {"kind", "Binding"}};
    review["request"]["object"] = {{"apiVersion", "v1"}, {"kind", "Binding"}, {"target", {{"name", "gpu-1"}}}};
    ExpectUnchanged(review);
  }
}

TEST(WebhookTest, SchedulerNameFollowsTheOption) {
  Json review = PodCreateReview();
  review["request"]["object"]["spec"]["schedulerName"] = "gpu-sched";
  ExpectUnchanged(review);
  EXPECT_TRUE(Review(review, {.scheduler_name = "gpu-sched"}).patched);
}

TEST(WebhookTest, MalformedReviewsGet400NamingTheField) {
  struct Case {
    const char* name;
    std::string body;
    const char* message;
  };
  auto with = [](auto edit) {
    Json review = PodCreateReview();
    edit(review);
    return json::Dump(review);
  };
  const std::vector<Case> cases = {
      {"not JSON", "{\"apiVersion\": ", "AdmissionReview: "},
      {"array", "[]", "AdmissionReview: expected object, got array"},
      {"v1beta1", with([](Json& r) { r["apiVersion"] = "admission.k8s.io/v1beta1"; }), "admission.k8s.io/v1beta1"},
      {"other kind", with([](Json& r) { r["kind"] = "TokenReview"; }), "TokenReview"},
      {"no request", with([](Json& r) { r.erase("request"); }), "request"},
      {"no uid", with([](Json& r) { r["request"].erase("uid"); }), "request.uid"},
      {"empty uid", with([](Json& r) { r["request"]["uid"] = ""; }), "request.uid: empty"},
      {"uid not a string", with([](Json& r) { r["request"]["uid"] = 7; }), "request.uid"},
      {"no operation", with([](Json& r) { r["request"].erase("operation"); }), "request.operation"},
      {"no kind", with([](Json& r) { r["request"].erase("kind"); }), "request.kind"},
      {"CREATE without object", with([](Json& r) { r["request"]["object"] = nullptr; }), "request.object: missing"},
      {"object not an object", with([](Json& r) { r["request"]["object"] = "pod"; }), "request.object"},
      {"no spec", with([](Json& r) { r["request"]["object"].erase("spec"); }), "request.object.spec"},
      {"labels not a map", with([](Json& r) { r["request"]["object"]["metadata"]["labels"] = Json::array(); }),
       "request.object.metadata.labels"},
      {"label not a string",
       with([](Json& r) { r["request"]["object"]["metadata"]["labels"]["phalanx.io/gang"] = 3; }),
       "labels[phalanx.io/gang]: expected string"},
      {"gates not a list", with([](Json& r) { r["request"]["object"]["spec"]["schedulingGates"] = "phalanx.io/gang"; }),
       "request.object.spec.schedulingGates"},
      {"gate not an object",
       with([](Json& r) { r["request"]["object"]["spec"]["schedulingGates"] = Json::array({"phalanx.io/gang"}); }),
       "schedulingGates[0]: expected object"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    WebhookReply reply = ReviewPodAdmission(c.body, {});
    EXPECT_EQ(reply.status, 400) << reply.body;
    EXPECT_FALSE(reply.patched);
    auto body = json::Parse(reply.body);
    ASSERT_TRUE(body.ok()) << reply.body;
    ASSERT_TRUE((*body)["Error"].is_string()) << reply.body;
    EXPECT_NE((*body)["Error"].get<std::string>().find(c.message), std::string::npos) << reply.body;
  }
}

// --- flags ---------------------------------------------------------------------------------

std::string TempFile(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::path(::testing::TempDir()) / ("phalanx-webhook-" + name);
  std::ofstream(path) << text;
  return path.string();
}

TEST(WebhookFlagsTest, OffWithoutAnAddress) {
  auto options = WebhookOptionsFromFlags("", "", "", "phalanx-scheduler");
  ASSERT_TRUE(options.ok()) << options.status().message();
  EXPECT_FALSE(options->has_value());
}

TEST(WebhookFlagsTest, BadFlagsAreRejectedNamingTheFlag) {
  const std::string garbage = TempFile("garbage.pem", "not a certificate\n");
  const std::string missing = (std::filesystem::path(::testing::TempDir()) / "phalanx-webhook-absent.pem").string();
  struct Case {
    const char* name;
    std::string addr, cert, key, scheduler;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"cert without address", "", garbage, "", "phalanx-scheduler", "need --webhook-addr"},
      {"bad address", "9443", garbage, garbage, "phalanx-scheduler", "--webhook-addr \"9443\": expected HOST:PORT"},
      {"bad port", ":99999", garbage, garbage, "phalanx-scheduler", "--webhook-addr \":99999\": bad port"},
      {"no cert", ":9443", "", garbage, "phalanx-scheduler", "--webhook-addr needs --webhook-tls-cert"},
      {"no key", ":9443", garbage, "", "phalanx-scheduler", "--webhook-addr needs --webhook-tls-key"},
      {"missing cert file", ":9443", missing, garbage, "phalanx-scheduler", "--webhook-tls-cert " + missing},
      {"missing key file", ":9443", garbage, missing, "phalanx-scheduler", "--webhook-tls-key " + missing},
      {"garbage cert", ":9443", garbage, garbage, "phalanx-scheduler", "--webhook-tls-cert/--webhook-tls-key: TLS"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto options = WebhookOptionsFromFlags(c.addr, c.cert, c.key, c.scheduler);
    ASSERT_FALSE(options.ok());
    EXPECT_NE(options.status().message().find(c.message), std::string::npos) << options.status().message();
  }
}

}  // namespace
}  // namespace phalanx::extender
