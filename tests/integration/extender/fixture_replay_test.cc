// The real phalanx-extender binary, in embedded mode, answers every request a real
// kube-scheduler v1.26 sent (tests/data/fixtures/kube-scheduler-v1.26) byte for byte over
// HTTP, with replies of the shape kube-scheduler accepts:
//   filter      NodeNames (or Nodes.items) only from the input; Failed* maps keyed by input nodes
//   prioritize  a bare array of {"Host","Score"} with 0 <= Score <= 10, hosts from the input
//   preempt     NodeNameToMetaVictims (whichever map came in) from the input candidates
//   bind        {"Error": string}
// and its health, metrics and debug endpoints, and `phalanx explain`, work against it.
// The snapshot holds exactly the fixtures' two nodes (8 and 4 GPUs), taken from the
// nodeCacheCapable=false capture (what `kubectl get nodes -o json` prints).
#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/json/json.h"
#include "tests/integration/extender/extender_process.h"

namespace phalanx::extender::testing {
namespace {

namespace fs = std::filesystem;

const std::string kFixtures = std::string(PHALANX_TEST_SOURCE_DIR) + "/tests/data/fixtures/kube-scheduler-v1.26";

// The order the scheduler sent them in (per pod: filter, [prioritize], [preempt], bind).
const std::vector<std::string> kReplayOrder = {
    "filter-001", "prioritize-001", "bind-001",  // gpu-pod-ext: 2 GPUs, both nodes
    "filter-002", "bind-002",                    // gpu-pod-ext-avoid1: 1 GPU
    "filter-003", "bind-003",                    // victim-low-1 (test-low) pinned to node 2
    "filter-004", "bind-004",                    // victim-low-2
    "filter-005", "preempt-001", "bind-005",     // preemptor-high (test-high) on node 2
    "nodecachecapable-false/filter-001", "nodecachecapable-false/prioritize-001",
    "nodecachecapable-false/bind-001",  // full Nodes lists
};

json::Json Parse(const std::string& text) {
  auto doc = json::Parse(text);
  EXPECT_TRUE(doc.ok()) << doc.status() << " in: " << text.substr(0, 400);
  return doc.ok() ? *doc : json::Json();
}

// The fixtures' nodes as a kubectl List (items get their kind, as kubectl prints them).
std::string FixtureSnapshot() {
  json::Json full = Parse(ReadFile(kFixtures + "/nodecachecapable-false/filter-001.request.raw.json"));
  json::Json items = json::Json::array();
  for (json::Json node : full["Nodes"]["items"]) {
    node["kind"] = "Node";
    node["apiVersion"] = "v1";
    items.push_back(std::move(node));
  }
  return json::Dump(json::Json{{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}});
}

struct Captured {
  std::string name;  // "filter-001"
  std::string verb;  // from the captured path /scheduler/<verb>
  std::string body;  // raw, as sent
  json::Json request;
};

Captured Load(const std::string& name) {
  Captured c;
  c.name = name;
  c.body = ReadFile(kFixtures + "/" + name + ".request.raw.json");
  json::Json headers = Parse(ReadFile(kFixtures + "/" + name + ".request-headers.json"));
  const std::string path = headers["path"].get<std::string>();
  c.verb = path.substr(path.rfind('/') + 1);
  c.request = Parse(c.body);
  return c;
}

std::set<std::string> InputNodes(const json::Json& request) {
  std::set<std::string> names;
  if (request.contains("NodeNames") && request["NodeNames"].is_array()) {
    for (const auto& n : request["NodeNames"]) names.insert(n.get<std::string>());
  }
  if (request.contains("Nodes") && request["Nodes"].is_object()) {
    for (const auto& n : request["Nodes"]["items"]) names.insert(n["metadata"]["name"].get<std::string>());
  }
  return names;
}

void ExpectValidFilterReply(const Captured& c, const json::Json& reply) {
  SCOPED_TRACE(c.name);
  const std::set<std::string> input = InputNodes(c.request);
  ASSERT_TRUE(reply.is_object());
  std::set<std::string> passed;
  const bool full = c.request["Nodes"].is_object();
  if (full) {
    ASSERT_TRUE(reply["Nodes"].is_object()) << "full-Nodes request needs a Nodes reply";
    for (const auto& n : reply["Nodes"]["items"]) passed.insert(n["metadata"]["name"].get<std::string>());
  } else {
    ASSERT_TRUE(reply["NodeNames"].is_array()) << "nodeCacheCapable request needs NodeNames";
    for (const auto& n : reply["NodeNames"]) passed.insert(n.get<std::string>());
  }
  for (const auto& n : passed) EXPECT_TRUE(input.contains(n)) << "filter named " << n << ", not in the input";
  std::set<std::string> failed;
  for (const char* key : {"FailedNodes", "FailedAndUnresolvableNodes"}) {
    ASSERT_TRUE(reply[key].is_object()) << key;
    for (const auto& [node, reason] : reply[key].items()) {
      EXPECT_TRUE(input.contains(node)) << key << " names " << node;
      EXPECT_TRUE(reason.is_string() && !reason.get<std::string>().empty()) << key << "." << node;
      EXPECT_FALSE(passed.contains(node)) << node << " both passed and failed";
      failed.insert(node);
    }
  }
  ASSERT_TRUE(reply["Error"].is_string());
  EXPECT_EQ(reply["Error"].get<std::string>(), "");
  // Every input node is accounted for: a node missing from both is a silent rejection.
  EXPECT_EQ(passed.size() + failed.size(), input.size());
}

void ExpectValidPrioritizeReply(const Captured& c, const json::Json& reply) {
  SCOPED_TRACE(c.name);
  const std::set<std::string> input = InputNodes(c.request);
  ASSERT_TRUE(reply.is_array()) << "prioritize returns a bare HostPriorityList";
  std::set<std::string> hosts;
  for (const auto& hp : reply) {
    ASSERT_TRUE(hp.is_object());
    EXPECT_EQ(hp.size(), 2u) << hp.dump();
    ASSERT_TRUE(hp["Host"].is_string());
    ASSERT_TRUE(hp["Score"].is_number_integer());
    const std::string host = hp["Host"].get<std::string>();
    EXPECT_TRUE(input.contains(host)) << host;
    EXPECT_TRUE(hosts.insert(host).second) << "duplicate host " << host;
    EXPECT_GE(hp["Score"].get<int>(), 0);
    EXPECT_LE(hp["Score"].get<int>(), 10);
  }
}

void ExpectValidPreemptReply(const Captured& c, const json::Json& reply) {
  SCOPED_TRACE(c.name);
  ASSERT_TRUE(reply.is_object());
  const bool meta = c.request["NodeNameToMetaVictims"].is_object();
  const char* in_key = meta ? "NodeNameToMetaVictims" : "NodeNameToVictims";
  // kube-scheduler reads only NodeNameToMetaVictims back, whichever map it sent.
  const char* key = "NodeNameToMetaVictims";
  ASSERT_TRUE(reply[key].is_object()) << reply.dump();
  for (const auto& [node, victims] : reply[key].items()) {
    ASSERT_TRUE(c.request[in_key].contains(node)) << "preempt may only narrow the candidates; " << node << " is new";
    std::set<std::string> offered;
    for (const auto& p : c.request[in_key][node]["Pods"]) {
      offered.insert(meta ? p["UID"].get<std::string>() : p["metadata"]["uid"].get<std::string>());
    }
    ASSERT_TRUE(victims["Pods"].is_array());
    ASSERT_TRUE(victims["NumPDBViolations"].is_number_integer());
    for (const auto& p : victims["Pods"]) {
      const std::string uid = p["UID"].get<std::string>();
      EXPECT_TRUE(offered.contains(uid)) << "victim " << uid << " is not a pod the scheduler sent for " << node;
    }
  }
}

class FixtureReplayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    process_ = std::make_unique<ExtenderProcess>(dir_, FixtureSnapshot());
    ASSERT_TRUE(process_->WaitServing()) << process_->log();
  }
  void TearDown() override {
    if (process_) {
      EXPECT_TRUE(process_->running()) << "the extender died:\n" << process_->log();
      EXPECT_EQ(process_->Stop(), std::optional<int>(0)) << process_->log();
    }
  }

  // Replays every capture in order on one keep-alive connection (as Go's client does),
  // checking each reply's shape. Returns the replies by capture name.
  std::map<std::string, json::Json> ReplayAll() {
    std::map<std::string, json::Json> replies;
    HttpConnection conn(process_->port());
    EXPECT_TRUE(conn.connected());
    for (const std::string& name : kReplayOrder) {
      Captured c = Load(name);
      HttpReply r = conn.Request("POST", "/v1/" + c.verb, c.body);
      EXPECT_EQ(r.status, 200) << name << ": " << r.body;
      EXPECT_NE(r.Header("Content-Type").find("application/json"), std::string::npos) << name;
      EXPECT_FALSE(r.closed) << name << ": the connection must stay usable";
      json::Json reply = Parse(r.body);
      if (c.verb == "filter") ExpectValidFilterReply(c, reply);
      if (c.verb == "prioritize") ExpectValidPrioritizeReply(c, reply);
      if (c.verb == "preempt") ExpectValidPreemptReply(c, reply);
      if (c.verb == "bind") {
        EXPECT_TRUE(reply.is_object() && reply["Error"].is_string()) << r.body;
        // Every captured pod fits where the scheduler bound it (node 2: 4 x 1 GPU).
        EXPECT_EQ(reply.value("Error", std::string("?")), "") << name;
      }
      replies[name] = reply;
    }
    return replies;
  }

  std::string dir_;
  std::unique_ptr<ExtenderProcess> process_;
};

TEST_F(FixtureReplayTest, EveryCaptureIsInTheReplayOrder) {
  std::set<std::string> on_disk;
  for (const auto& e : fs::recursive_directory_iterator(kFixtures)) {
    const std::string rel = fs::relative(e.path(), kFixtures).string();
    const std::string suffix = ".request.raw.json";
    if (rel.size() > suffix.size() && rel.ends_with(suffix)) on_disk.insert(rel.substr(0, rel.size() - suffix.size()));
  }
  EXPECT_EQ(on_disk, std::set<std::string>(kReplayOrder.begin(), kReplayOrder.end()));
}

TEST_F(FixtureReplayTest, EveryCapturedRequestGetsAValidReply) {
  auto replies = ReplayAll();
  // The first pod (2 GPUs) may go to either node; the 8-GPU node must not be rejected.
  const auto& names = replies["filter-001"]["NodeNames"];
  EXPECT_NE(std::find(names.begin(), names.end(), json::Json("fake-gpu-node-1")), names.end());

  // Every bind is charged in the ledger where the scheduler asked.
  json::Json state = Parse(HttpCall(process_->metrics_port(), "GET", "/debug/state").body);
  std::map<std::string, std::string> where;
  for (const auto& p : state["pods"]) where[p["pod"].get<std::string>()] = p.value("node", "");
  for (const std::string& name : kReplayOrder) {
    if (name.find("bind-") == std::string::npos) continue;
    json::Json bind = Parse(ReadFile(kFixtures + "/" + name + ".request.raw.json"));
    const std::string key = bind["PodNamespace"].get<std::string>() + "/" + bind["PodName"].get<std::string>();
    EXPECT_EQ(where[key], bind["Node"].get<std::string>()) << key;
  }
}

// nodeCacheCapable: false sends the victims as full Pods in NodeNameToVictims; the reply must
// still be NodeNameToMetaVictims (kube-scheduler reads nothing else). The request is preempt-001
// with its UIDs replaced by the victims' Pod objects, as that scheduler would have sent them.
TEST_F(FixtureReplayTest, FullModePreemptIsAnsweredWithMetaVictims) {
  HttpConnection conn(process_->port());
  for (const std::string& name : kReplayOrder) {
    if (name == "preempt-001") break;
    Captured c = Load(name);
    ASSERT_EQ(conn.Request("POST", "/v1/" + c.verb, c.body).status, 200) << name;
  }
  std::map<std::string, json::Json> pods_by_uid;  // the victims, as bound by bind-003/004
  for (const char* f : {"filter-003", "filter-004"}) {
    json::Json pod = Load(f).request["Pod"];
    pod["spec"]["nodeName"] = "fake-gpu-node-2";
    pods_by_uid[pod["metadata"]["uid"].get<std::string>()] = pod;
  }
  Captured meta = Load("preempt-001");
  json::Json full = meta.request;
  json::Json victims = json::Json::object();
  std::set<std::string> offered;
  for (const auto& [node, mv] : meta.request["NodeNameToMetaVictims"].items()) {
    json::Json pods = json::Json::array();
    for (const auto& p : mv["Pods"]) {
      const std::string uid = p["UID"].get<std::string>();
      ASSERT_TRUE(pods_by_uid.contains(uid)) << uid;
      pods.push_back(pods_by_uid[uid]);
      offered.insert(uid);
    }
    victims[node] = {{"Pods", pods}, {"NumPDBViolations", mv["NumPDBViolations"]}};
  }
  full["NodeNameToVictims"] = victims;
  full["NodeNameToMetaVictims"] = nullptr;
  HttpReply r = conn.Request("POST", "/v1/preempt", json::Dump(full));
  ASSERT_EQ(r.status, 200) << r.body;
  json::Json reply = Parse(r.body);
  ASSERT_TRUE(reply["NodeNameToMetaVictims"].is_object()) << r.body;
  EXPECT_TRUE(reply["NodeNameToVictims"].is_null()) << r.body;
  // The same decision as for the nodeCacheCapable capture: a lower-tier victim makes room.
  ASSERT_EQ(reply["NodeNameToMetaVictims"].size(), 1u) << r.body;
  for (const auto& [node, mv] : reply["NodeNameToMetaVictims"].items()) {
    ASSERT_FALSE(mv["Pods"].empty()) << r.body;
    for (const auto& p : mv["Pods"]) EXPECT_TRUE(offered.contains(p["UID"].get<std::string>())) << r.body;
  }
}

TEST_F(FixtureReplayTest, HealthMetricsAndDebugEndpointsAnswer) {
  ReplayAll();
  const int verbs = process_->port(), debug = process_->metrics_port();
  for (int port : {verbs, debug}) {
    EXPECT_EQ(HttpCall(port, "GET", "/healthz").status, 200) << port;
    EXPECT_EQ(HttpCall(port, "GET", "/readyz").status, 200) << port;
  }
  HttpReply metrics = HttpCall(debug, "GET", "/metrics");
  ASSERT_EQ(metrics.status, 200);
  for (const char* series :
       {"phalanx_extender_requests_total{verb=\"filter\",code=\"200\"} 6",
        "phalanx_extender_requests_total{verb=\"prioritize\",code=\"200\"} 2",
        "phalanx_extender_requests_total{verb=\"preempt\",code=\"200\"} 1",
        "phalanx_extender_requests_total{verb=\"bind\",code=\"200\"} 6", "phalanx_extender_request_duration_seconds",
        "phalanx_extender_held_binds 0"}) {
    EXPECT_NE(metrics.body.find(series), std::string::npos) << series << "\n" << metrics.body;
  }

  HttpReply state = HttpCall(debug, "GET", "/debug/state");
  ASSERT_EQ(state.status, 200);
  json::Json s = Parse(state.body);
  EXPECT_EQ(s["cluster"]["nodes"], 2);
  EXPECT_EQ(s["cluster"]["totalGpus"], 12);

  HttpReply explain = HttpCall(debug, "GET", "/debug/explain?pod=default/gpu-pod-ext");
  ASSERT_EQ(explain.status, 200) << explain.body;
  json::Json e = Parse(explain.body);
  EXPECT_EQ(e["pod"], "default/gpu-pod-ext");
  EXPECT_NE(e["explanation"].get<std::string>().find("fake-gpu-node-1"), std::string::npos) << explain.body;
  EXPECT_EQ(HttpCall(debug, "GET", "/debug/explain").status, 400);

  // Verbs live on --listen only; debug endpoints on --metrics-addr only (docs/architecture.md §2.5).
  EXPECT_EQ(HttpCall(debug, "POST", "/v1/filter", "{}").status, 404);
  EXPECT_EQ(HttpCall(verbs, "GET", "/debug/state").status, 404);
  EXPECT_EQ(HttpCall(verbs, "GET", "/metrics").status, 404);
}

TEST_F(FixtureReplayTest, PhalanxExplainAsksTheExtender) {
  ReplayAll();
  const std::string url = "http://127.0.0.1:" + std::to_string(process_->metrics_port());
  std::string out;
  EXPECT_EQ(RunCommand({PHALANX_CLI_BINARY, "explain", "default/gpu-pod-ext", "--extender", url}, &out, dir_), 0)
      << out;
  EXPECT_NE(out.find("fake-gpu-node-1"), std::string::npos) << out;
  // A pod the extender never saw is explained too (not an error).
  EXPECT_EQ(RunCommand({PHALANX_CLI_BINARY, "explain", "default/never-seen", "--extender", url}, &out, dir_), 0)
      << out;
  EXPECT_FALSE(out.empty());
}

}  // namespace
}  // namespace phalanx::extender::testing
