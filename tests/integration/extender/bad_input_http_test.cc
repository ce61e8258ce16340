// Bad input to the real phalanx-extender binary over HTTP (issue 5, item 6): malformed JSON,
// wrong types, missing fields, unknown nodes and pods, oversized bodies and slow clients get
// a 4xx with a message that says what is wrong (or, for unknown nodes, a filter result with
// reasons); the process never crashes and /debug/state never changes.
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/json/json.h"
#include "tests/integration/extender/extender_process.h"

namespace phalanx::extender::testing {
namespace {

constexpr size_t kMaxRequestBytes = 256 << 10;
constexpr int kReadTimeoutSeconds = 2;

// Two nodes (8 and 4 GPUs), one running pod on the first and one pending pod.
std::string Snapshot() {
  auto node = [](const std::string& name, int gpus) {
    return json::Json{{"kind", "Node"},
                      {"metadata", {{"name", name}, {"labels", {{"kubernetes.io/hostname", name}}}}},
                      {"status", {{"allocatable", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}};
  };
  json::Json running = {
      {"kind", "Pod"},
      {"metadata", {{"name", "trainer"}, {"namespace", "default"}, {"uid", "uid-trainer"}}},
      {"spec",
       {{"nodeName", "node-a"},
        {"containers", {{{"name", "main"}, {"resources", {{"requests", {{"nvidia.com/gpu", "2"}}}}}}}}}},
      {"status", {{"phase", "Running"}}}};
  json::Json waiting = running;
  waiting["metadata"] = {{"name", "waiting"}, {"namespace", "default"}, {"uid", "uid-waiting"}};
  waiting["spec"].erase("nodeName");
  waiting["status"]["phase"] = "Pending";
  return json::Dump(
      json::Json{{"kind", "List"}, {"items", {node("node-a", 8), node("node-b", 4), running, waiting}}});
}

std::string PodJson(const std::string& gpu_quantity = "\"1\"") {
  return R"({"metadata":{"name":"p","namespace":"default","uid":"uid-p"},"spec":{"containers":[{"name":"main","resources":{"requests":{"nvidia.com/gpu":)" +
         gpu_quantity + "}}}]}}";
}

struct BadCase {
  std::string verb;
  std::string body;
  std::string expect_in_message;  // a fragment of the {"Error": ...} text
};

class BadInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    process_ = std::make_unique<ExtenderProcess>(
        dir_, Snapshot(),
        std::vector<std::string>{"--max-request-bytes", std::to_string(kMaxRequestBytes), "--read-timeout-seconds",
                                 std::to_string(kReadTimeoutSeconds)});
    ASSERT_TRUE(process_->WaitServing()) << process_->log();
    state_before_ = State();
    ASSERT_FALSE(state_before_.empty());
  }
  void TearDown() override {
    if (!process_) return;
    EXPECT_TRUE(process_->running()) << "the extender died:\n" << process_->log();
    EXPECT_EQ(State(), state_before_) << "bad input changed the ledger";
    EXPECT_EQ(process_->Stop(), std::optional<int>(0)) << process_->log();
  }

  std::string State() { return HttpCall(process_->metrics_port(), "GET", "/debug/state").body; }

  // A well-formed filter request still works (the server is not wedged).
  void ExpectServing(HttpConnection& conn) {
    HttpReply r = conn.Request("POST", "/v1/filter", R"({"Pod":)" + PodJson() + R"(,"NodeNames":["node-b"]})",
                               kHangDeadline);
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_NE(r.body.find("\"NodeNames\":[\"node-b\"]"), std::string::npos) << r.body;
  }

  std::string dir_;
  std::unique_ptr<ExtenderProcess> process_;
  std::string state_before_;
};

TEST_F(BadInputTest, MalformedRequestsGet400WithAMessage) {
  const std::string pod = PodJson();
  const std::vector<BadCase> cases = {
      // Not JSON, or not an object.
      {"filter", "", "request body is empty"},
      {"prioritize", "  \n", "request body is empty"},
      {"preempt", "", "request body is empty"},
      {"bind", "", "request body is empty"},
      {"filter", "{", "request body"},
      {"filter", "not json", "request body"},
      {"filter", "[]", "expected an object"},
      {"filter", "null", "expected an object"},
      {"filter", "{\"Pod\":" + pod + ",\"NodeNames\":[\"node-a\"]", "request body"},  // truncated
      {"prioritize", "{\"Pod\":" + pod + ",\"NodeNames\":[\"node-a\",]}", "NodeNames"},
      {"preempt", "{\"Pod\":", "malformed JSON"},
      {"bind", "{\"PodName\":\"p\"", "malformed JSON"},
      {"bind", "[1,2,3]", "expected an object"},
      {"filter", std::string(5000, '['), "request body"},  // deep nesting
      {"bind", std::string(100000, '[') + std::string(100000, ']'), "expected an object"},
      {"filter", "{\"Pod\":\"\xff\xfe\"}", "UTF-8"},  // invalid UTF-8
      // Missing fields.
      {"filter", "{}", "Pod: missing"},
      {"prioritize", "{\"Pod\":null,\"NodeNames\":[\"node-a\"]}", "Pod: missing"},
      {"preempt", "{\"NodeNameToMetaVictims\":{}}", "Pod: missing"},
      {"bind", "{\"PodNamespace\":\"default\",\"Node\":\"node-a\"}", "PodName: missing"},
      {"bind", "{\"PodName\":\"p\",\"PodNamespace\":\"default\"}", "Node: missing"},
      {"bind", "{\"PodName\":\"\",\"PodNamespace\":\"default\",\"Node\":\"node-a\"}", "PodName: empty"},
      {"filter", "{\"Pod\":{\"spec\":{}},\"NodeNames\":[\"node-a\"]}", "metadata"},
      // Wrong types.
      {"filter", "{\"Pod\":\"p\",\"NodeNames\":[\"node-a\"]}", "Pod: expected an object"},
      {"filter", "{\"Pod\":" + pod + ",\"NodeNames\":\"node-a\"}", "NodeNames: expected an array"},
      {"prioritize", "{\"Pod\":" + pod + ",\"NodeNames\":[1,2]}", "NodeNames[]: expected a string"},
      {"filter", "{\"Pod\":" + pod + ",\"Nodes\":[]}", "Nodes: expected a NodeList"},
      {"filter", "{\"Pod\":" + pod + ",\"Nodes\":{\"items\":[1]}}", "Nodes.items[]"},
      {"filter", "{\"Pod\":" + PodJson("\"abc\"") + ",\"NodeNames\":[\"node-a\"]}", "not a whole-device count"},
      {"filter", "{\"Pod\":" + PodJson("\"0.5\"") + ",\"NodeNames\":[\"node-a\"]}", "nvidia.com/gpu"},
      {"preempt", "{\"Pod\":" + pod + ",\"NodeNameToMetaVictims\":[]}", "NodeNameToMetaVictims: expected an object"},
      {"preempt", "{\"Pod\":" + pod + ",\"NodeNameToMetaVictims\":{\"node-a\":{\"Pods\":{}}}}", "Pods: expected an array"},
      {"preempt", "{\"Pod\":" + pod + ",\"NodeNameToMetaVictims\":{\"node-a\":{\"Pods\":[{}]}}}", "UID: missing"},
      {"bind", "{\"PodName\":1,\"PodNamespace\":\"default\",\"Node\":\"node-a\"}", "PodName: expected a string"},
      {"bind", "{\"PodName\":\"p\",\"PodNamespace\":\"default\",\"Node\":[\"node-a\"]}", "Node: expected a string"},
  };
  HttpConnection conn(process_->port());
  ASSERT_TRUE(conn.connected());
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.verb + " <- " + c.body.substr(0, 120));
    HttpReply r = conn.Request("POST", "/v1/" + c.verb, c.body);
    EXPECT_EQ(r.status, 400) << r.body;
    auto reply = json::Parse(r.body);
    ASSERT_TRUE(reply.ok()) << r.body;
    ASSERT_TRUE(reply->is_object() && (*reply)["Error"].is_string()) << r.body;
    EXPECT_NE((*reply)["Error"].get<std::string>().find(c.expect_in_message), std::string::npos) << r.body;
    // A 400 for bad JSON keeps the connection usable (the HTTP framing was fine).
    ASSERT_FALSE(r.closed);
    ASSERT_TRUE(process_->running()) << process_->log();
  }
  ExpectServing(conn);
}

TEST_F(BadInputTest, WrongMethodAndPathGet4xx) {
  EXPECT_EQ(HttpCall(process_->port(), "GET", "/v1/filter").status, 405);
  EXPECT_EQ(HttpCall(process_->port(), "PUT", "/v1/bind", "{}").status, 405);
  EXPECT_EQ(HttpCall(process_->port(), "POST", "/v1/nosuchverb", "{}").status, 404);
  EXPECT_EQ(HttpCall(process_->port(), "POST", "/scheduler/filter", "{}").status, 404);
  HttpConnection conn(process_->port());
  ASSERT_TRUE(conn.SendRaw("THIS IS NOT HTTP\r\n\r\n"));
  EXPECT_EQ(conn.ReadReply().status, 400);
}

TEST_F(BadInputTest, UnknownNodesAreFailedWithReasonsAndUnknownPodsChangeNothing) {
  HttpConnection conn(process_->port());
  HttpReply r = conn.Request("POST", "/v1/filter",
                             R"({"Pod":)" + PodJson() + R"(,"NodeNames":["node-a","ghost-1","node-b","ghost-2"]})");
  ASSERT_EQ(r.status, 200) << r.body;
  auto reply = json::Parse(r.body);
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ((*reply)["NodeNames"], (json::Json{"node-a", "node-b"}));
  for (const char* ghost : {"ghost-1", "ghost-2"}) {
    const json::Json& unresolvable = (*reply)["FailedAndUnresolvableNodes"];
    ASSERT_TRUE(unresolvable.contains(ghost)) << r.body;
    EXPECT_FALSE(unresolvable[ghost].get<std::string>().empty());
  }

  // A name that needs every kind of escaping comes back as the same string.
  const std::string odd = "gh\"o\\st\n\t\x01\xc3\xa9";
  r = conn.Request("POST", "/v1/filter",
                   R"({"Pod":)" + PodJson() + R"(,"NodeNames":[)" + json::Dump(json::Json(odd)) + "]}");
  ASSERT_EQ(r.status, 200) << r.body;
  reply = json::Parse(r.body);
  ASSERT_TRUE(reply.ok()) << r.body;
  EXPECT_TRUE((*reply)["FailedAndUnresolvableNodes"].contains(odd)) << r.body;

  r = conn.Request("POST", "/v1/prioritize", R"({"Pod":)" + PodJson() + R"(,"NodeNames":["ghost-1","node-b"]})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find(R"({"Host":"ghost-1","Score":0})"), std::string::npos) << r.body;

  // Victims the extender has never heard of, on a node it does not know: a veto, not a crash.
  // (The preemptor is a pod the ledger knows: a new preemptor is rightly recorded as pending.)
  const std::string waiting = R"({"metadata":{"name":"waiting","namespace":"default","uid":"uid-waiting"},"spec":{"containers":[{"name":"main","resources":{"requests":{"nvidia.com/gpu":"2"}}}]}})";
  r = conn.Request("POST", "/v1/preempt",
                   R"({"Pod":)" + waiting +
                       R"(,"NodeNameToVictims":null,"NodeNameToMetaVictims":{"ghost-1":{"Pods":[{"UID":"nobody"}],"NumPDBViolations":0}}})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body.find("nobody"), std::string::npos) << "unknown victims must not be accepted: " << r.body;

  // A GPU pod bound to a node the ledger does not know: the bind fails with a reason.
  ASSERT_EQ(conn.Request("POST", "/v1/filter", R"({"Pod":)" + PodJson() + R"(,"NodeNames":["node-a"]})").status, 200);
  r = conn.Request("POST", "/v1/bind", R"({"PodName":"p","PodNamespace":"default","PodUID":"uid-p","Node":"ghost-1"})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find("ghost-1 is not in the extender's ledger"), std::string::npos) << r.body;
  ExpectServing(conn);
}

TEST_F(BadInputTest, OversizedBodiesGet413WithoutReadingThem) {
  // Declared too large: refused before the body is sent.
  {
    HttpConnection conn(process_->port());
    ASSERT_TRUE(conn.SendRaw("POST /v1/filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                             "Content-Length: " +
                             std::to_string(kMaxRequestBytes * 100) + "\r\n\r\n{\"Pod\":"));
    HttpReply r = conn.ReadReply();
    EXPECT_EQ(r.status, 413) << r.headers << r.body;
    EXPECT_TRUE(conn.WaitClosed());
  }
  // Actually sent: a well-formed request just over the limit.
  {
    std::string body = R"({"Pod":)" + PodJson() + R"(,"NodeNames":[)";
    for (int i = 0; body.size() <= kMaxRequestBytes; ++i) body += (i ? ",\"" : "\"") + std::string("node-x") + std::to_string(i) + "\"";
    body += "]}";
    HttpConnection conn(process_->port());
    HttpReply r = conn.Request("POST", "/v1/filter", body);
    EXPECT_EQ(r.status, 413) << r.body;
  }
  // Chunked without a length: the limit still applies.
  {
    HttpConnection conn(process_->port());
    std::string chunk(64 << 10, ' ');
    std::string req = "POST /v1/prioritize HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
    ASSERT_TRUE(conn.SendRaw(req));
    bool refused = false;
    for (size_t sent = 0; sent <= 2 * kMaxRequestBytes && !refused; sent += chunk.size()) {
      char size[32];
      std::snprintf(size, sizeof(size), "%zx\r\n", chunk.size());
      refused = !conn.SendRaw(std::string(size) + chunk + "\r\n");
    }
    EXPECT_EQ(conn.ReadReply().status, 413);
  }
  HttpConnection conn(process_->port());
  ExpectServing(conn);
}

TEST_F(BadInputTest, ASlowClientBlocksNobodyAndIsCutOffAfterTheReadTimeout) {
  // More stalled clients than the server has I/O threads, each mid-body.
  const std::string body = R"({"Pod":)" + PodJson() + R"(,"NodeNames":["node-a","node-b"]})";
  std::vector<std::unique_ptr<HttpConnection>> stalled;
  for (int i = 0; i < 16; ++i) {
    auto c = std::make_unique<HttpConnection>(process_->port());
    const std::string req = HttpConnection::Format("POST", "/v1/filter", body);
    ASSERT_TRUE(c->SendRaw(req.substr(0, req.size() - body.size() / 2)));
    stalled.push_back(std::move(c));
  }
  // One stalled before its headers were complete, too.
  auto headers_only = std::make_unique<HttpConnection>(process_->port());
  ASSERT_TRUE(headers_only->SendRaw("POST /v1/filter HTTP/1.1\r\nHost: x\r\nContent-Le"));

  // Everybody else is served while they stall (well before the read timeout).
  const auto start = std::chrono::steady_clock::now();
  HttpConnection conn(process_->port());
  for (int i = 0; i < 50; ++i) ExpectServing(conn);
  EXPECT_EQ(HttpCall(process_->metrics_port(), "GET", "/healthz").status, 200);

  // The stalled connections are closed by the server once the read timeout passes.
  for (auto& c : stalled) EXPECT_TRUE(c->WaitClosed()) << "a stalled client was never cut off";
  EXPECT_TRUE(headers_only->WaitClosed());
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(waited, kReadTimeoutSeconds * 0.5) << "cut off long before the read timeout";
  HttpConnection fresh(process_->port());  // `conn` idled past the read timeout too
  ExpectServing(fresh);
}

}  // namespace
}  // namespace phalanx::extender::testing
