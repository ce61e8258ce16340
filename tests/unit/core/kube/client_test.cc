#include "core/kube/client.h"

#include <gtest/gtest.h>

#include <fstream>

#include "tests/fakes/clock/fake_clock.h"
#include "tests/unit/core/http/test_certs.h"
#include "tests/unit/core/kube/test_server.h"

namespace phalanx::kube {
namespace {

using testing::ScriptedServer;
using namespace std::chrono_literals;

std::unique_ptr<KubeClient> MakeClient(const KubeConfig& config, ClientOptions options = {}) {
  auto c = KubeClient::Create(config, std::move(options));
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? std::move(*c) : nullptr;
}

http::Response JsonReply(int code, const std::string& body, std::vector<http::Header> headers = {}) {
  return {code, "application/json", std::move(headers), body};
}

TEST(KubeClientTest, RequestsAreWhatKubeApiserverExpects) {
  ScriptedServer server;
  ASSERT_TRUE(server.started().ok());
  server.Set([](const http::Request& r) {
    return JsonReply(200, R"({"metadata":{"name":"a","resourceVersion":"7"},"echo":")" + r.method + "\"}");
  });
  auto client = MakeClient(server.Config());
  using namespace resources;  // NOLINT

  auto got = client->Get(kPods, "ml", "a");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ((*got)["echo"], "GET");
  ListOptions lo;
  lo.label_selector = "phalanx.io/gang=g1";
  lo.field_selector = "spec.nodeName=n1";
  lo.limit = 10;
  ASSERT_TRUE(client->List(kPods, "", lo).ok());
  Json tj = {{"apiVersion", "phalanx.io/v1alpha1"}, {"kind", "TrainingJob"}, {"metadata", {{"name", "tj"}}}};
  ASSERT_TRUE(client->Create(kTrainingJobs, "ml", tj, {.field_manager = "phalanx-operator"}).ok());
  ASSERT_TRUE(client->Update(kTrainingJobs, "ml", tj).ok());
  ASSERT_TRUE(client->UpdateStatus(kTrainingJobs, "ml", tj).ok());
  ASSERT_TRUE(client->Patch(kPods, "ml", "a", PatchType::kMerge,
                            Json{{"metadata", {{"annotations", {{"phalanx.io/devices", "{}"}}}}}})
                  .ok());
  ASSERT_TRUE(client->Patch(kPods, "ml", "a", PatchType::kJsonPatch,
                            std::string_view(R"([{"op":"remove","path":"/spec/schedulingGates/0"}])"))
                  .ok());
  ASSERT_TRUE(client->Apply(kNodes, "", Json{{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", "n1"}}}},
                            "phalanx-device-plugin", /*force=*/true)
                  .ok());
  ASSERT_TRUE(client->Delete(kPods, "ml", "a", {.grace_period_seconds = 0, .propagation_policy = "Background"}).ok());
  ASSERT_TRUE(client->Bind("ml", "a", "node-1", "uid-1").ok());
  ASSERT_TRUE(client->Evict("ml", "a").ok());

  const auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 11u);
  for (const auto& r : reqs) {
    EXPECT_EQ(r.authorization, "Bearer t0ken");
    EXPECT_EQ(r.accept, "application/json");
  }
  EXPECT_EQ(reqs[0].method, "GET");
  EXPECT_EQ(reqs[0].target, "/api/v1/namespaces/ml/pods/a");
  EXPECT_EQ(reqs[1].target, "/api/v1/pods?labelSelector=phalanx.io%2Fgang%3Dg1&fieldSelector=spec.nodeName%3Dn1&limit=10");
  EXPECT_EQ(reqs[2].method, "POST");
  EXPECT_EQ(reqs[2].target, "/apis/phalanx.io/v1alpha1/namespaces/ml/trainingjobs?fieldManager=phalanx-operator");
  EXPECT_EQ(reqs[2].content_type, "application/json");
  EXPECT_EQ(Json::parse(reqs[2].body), tj);
  EXPECT_EQ(reqs[3].method, "PUT");
  EXPECT_EQ(reqs[3].target, "/apis/phalanx.io/v1alpha1/namespaces/ml/trainingjobs/tj");
  EXPECT_EQ(reqs[4].target, "/apis/phalanx.io/v1alpha1/namespaces/ml/trainingjobs/tj/status");
  EXPECT_EQ(reqs[5].method, "PATCH");
  EXPECT_EQ(reqs[5].content_type, "application/merge-patch+json");
  EXPECT_EQ(reqs[6].content_type, "application/json-patch+json");
  EXPECT_EQ(Json::parse(reqs[6].body)[0]["op"], "remove");
  EXPECT_EQ(reqs[7].target, "/api/v1/nodes/n1?fieldManager=phalanx-device-plugin&force=true");
  EXPECT_EQ(reqs[7].content_type, "application/apply-patch+yaml");
  EXPECT_EQ(reqs[8].method, "DELETE");
  const Json del = Json::parse(reqs[8].body);
  EXPECT_EQ(del["kind"], "DeleteOptions");
  EXPECT_EQ(del["gracePeriodSeconds"], 0);
  EXPECT_EQ(del["propagationPolicy"], "Background");
  EXPECT_EQ(reqs[9].target, "/api/v1/namespaces/ml/pods/a/binding");
  const Json bind = Json::parse(reqs[9].body);
  EXPECT_EQ(bind["kind"], "Binding");
  EXPECT_EQ(bind["target"]["name"], "node-1");
  EXPECT_EQ(bind["target"]["kind"], "Node");
  EXPECT_EQ(bind["metadata"]["uid"], "uid-1");
  EXPECT_EQ(reqs[10].target, "/api/v1/namespaces/ml/pods/a/eviction");
  EXPECT_EQ(Json::parse(reqs[10].body)["apiVersion"], "policy/v1");
}

TEST(KubeClientTest, ApplyNeedsAFieldManager) {
  ScriptedServer server;
  auto client = MakeClient(server.Config());
  auto r = client->Patch(resources::kPods, "ml", "a", PatchType::kApply, std::string_view("{}"));
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(server.count(), 0u);
}

TEST(KubeClientTest, ServerErrorsSurfaceWithTheirStatusMessage) {
  ScriptedServer server;
  server.Set([](const http::Request&) {
    return JsonReply(409, R"({"kind":"Status","status":"Failure","reason":"Conflict","code":409,
      "message":"Operation cannot be fulfilled on pods \"a\": the object has been modified"})");
  });
  auto client = MakeClient(server.Config());
  auto r = client->Update(resources::kPods, "ml", Json{{"metadata", {{"name", "a"}}}});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(IsConflict(r.status()));
  EXPECT_EQ(r.status().code(), StatusCode::kAborted);
  EXPECT_EQ(r.status().message(),
            "Conflict (HTTP 409): Operation cannot be fulfilled on pods \"a\": the object has been modified");
  EXPECT_EQ(server.count(), 1u);  // 409 is never retried
}

TEST(KubeClientTest, RetriesHonourRetryAfter) {
  ScriptedServer server;
  std::atomic<int> calls{0};
  server.Set([&](const http::Request&) {
    if (calls++ < 2) {
      return JsonReply(429, R"({"kind":"Status","reason":"TooManyRequests","code":429,"message":"slow down"})",
                       {{"Retry-After", "3"}});
    }
    return JsonReply(200, R"({"ok":true})");
  });
  std::vector<Duration> sleeps;
  std::mutex mu;
  ClientOptions o;
  o.qps = 0;
  o.sleep = [&](Duration d) {
    std::lock_guard lock(mu);
    sleeps.push_back(d);
  };
  auto client = MakeClient(server.Config(), o);
  // A create is retried on 429: the server did not process it.
  auto r = client->Create(resources::kPods, "ml", Json{{"metadata", {{"name", "a"}}}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(server.count(), 3u);
  ASSERT_EQ(sleeps.size(), 2u);
  EXPECT_EQ(sleeps[0], std::chrono::seconds(3));
  EXPECT_EQ(sleeps[1], std::chrono::seconds(3));
}

TEST(KubeClientTest, ObserverSeesEveryAttempt) {
  ScriptedServer server;
  std::atomic<int> calls{0};
  server.Set([&](const http::Request&) {
    return calls++ == 0 ? JsonReply(503, "{}") : JsonReply(200, "{}");
  });
  std::mutex mu;
  std::vector<std::pair<std::string, int>> seen;
  ClientOptions o;
  o.sleep = [](Duration) {};
  o.observer = [&](std::string_view method, int status, Duration latency) {
    EXPECT_GE(latency, Duration::zero());
    std::lock_guard lock(mu);
    seen.emplace_back(std::string(method), status);
  };
  auto client = MakeClient(server.Config(), o);
  ASSERT_TRUE(client->Get(resources::kPods, "ml", "a").ok());
  EXPECT_EQ(seen, (std::vector<std::pair<std::string, int>>{{"GET", 503}, {"GET", 200}}));
}

TEST(KubeClientTest, WritesAreNotRetriedOnAmbiguous5xxButReadsAre) {
  ScriptedServer server;
  server.Set([](const http::Request&) {
    return JsonReply(500, R"({"kind":"Status","reason":"InternalError","code":500,"message":"etcd hiccup"})");
  });
  ClientOptions o;
  o.max_retries = 3;
  o.sleep = [](Duration) {};
  auto client = MakeClient(server.Config(), o);
  auto w = client->Create(resources::kPods, "ml", Json{{"metadata", {{"name", "a"}}}});
  EXPECT_EQ(w.status().message(), "InternalError (HTTP 500): etcd hiccup");
  EXPECT_EQ(server.count(), 1u);
  auto r = client->Get(resources::kPods, "ml", "a");
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(server.count(), 1u + 4u);  // first try + 3 retries
}

TEST(KubeClientTest, EvictionRefusedByAPdbIsReturnedAtOnce) {
  ScriptedServer server;
  server.Set([](const http::Request&) {
    return JsonReply(429, R"({"kind":"Status","reason":"TooManyRequests","code":429,
      "message":"Cannot evict pod as it would violate the pod's disruption budget."})");
  });
  ClientOptions o;
  o.sleep = [](Duration) {};
  auto client = MakeClient(server.Config(), o);
  Status s = client->Evict("ml", "a");
  EXPECT_TRUE(IsTooManyRequests(s)) << s;
  EXPECT_EQ(server.count(), 1u);
}

TEST(KubeClientTest, QpsLimitSpacesRequests) {
  ScriptedServer server;
  phalanx::testing::FakeClock clock;
  Duration slept{0};
  ClientOptions o;
  o.qps = 10;
  o.burst = 2;
  o.clock = &clock;
  o.sleep = [&](Duration d) {
    slept += d;
    clock.Advance(d);
  };
  auto client = MakeClient(server.Config(), o);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(client->Get(resources::kNodes, "", "n").ok());
  // 2 from the burst, then one every 100 ms.
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::milliseconds>(slept).count(), 300);
}

TEST(KubeClientTest, TokenFileIsReReadPeriodically) {
  ScriptedServer server;
  phalanx::testing::TempDir dir;
  const std::string token = dir.path() + "/token";
  std::ofstream(token) << "first\n";
  phalanx::testing::FakeClock clock;
  ClientOptions o;
  o.clock = &clock;
  KubeConfig config = server.Config();
  config.token_file = token;
  auto client = MakeClient(config, o);
  ASSERT_TRUE(client->Get(resources::kNodes, "", "n").ok());
  std::ofstream(token, std::ios::trunc) << "second";
  ASSERT_TRUE(client->Get(resources::kNodes, "", "n").ok());
  clock.Advance(61s);
  ASSERT_TRUE(client->Get(resources::kNodes, "", "n").ok());
  auto reqs = server.requests();
  EXPECT_EQ(reqs[0].authorization, "Bearer first");
  EXPECT_EQ(reqs[1].authorization, "Bearer first");
  EXPECT_EQ(reqs[2].authorization, "Bearer second");
}

TEST(KubeClientTest, PerRequestTimeout) {
  ScriptedServer server;
  std::mutex mu;
  std::vector<http::ResponseWriter> held;
  server.SetAsync([&](const http::Request&, http::ResponseWriter&& w) {
    std::lock_guard lock(mu);
    held.push_back(std::move(w));  // never answered
  });
  ClientOptions o;
  o.max_retries = 0;
  auto client = MakeClient(server.Config(), o);
  ListOptions lo;
  lo.timeout = 300ms;
  const auto start = std::chrono::steady_clock::now();
  auto r = client->List(resources::kPods, "", lo);
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded) << r.status();
  EXPECT_LT(took, 10s);
  EXPECT_GE(took, 250ms);
  std::lock_guard lock(mu);
  for (auto& w : held) w.Reply({200, "application/json", {}, "{}"});
}

TEST(KubeClientTest, NetworkFailureIsUnavailable) {
  uint16_t port;
  {
    ScriptedServer gone;
    port = gone.port();
  }
  KubeConfig config;
  config.server = "http://127.0.0.1:" + std::to_string(port);
  ClientOptions o;
  o.max_retries = 1;
  o.sleep = [](Duration) {};
  auto client = MakeClient(config, o);
  auto r = client->Get(resources::kPods, "ml", "a");
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status();
  EXPECT_EQ(ReasonOf(r.status()), Reason::kNetwork) << r.status();
  EXPECT_EQ(client->requests_sent(), 2u);
}

TEST(KubeClientTest, ListPagesFollowsContinueTokens) {
  ScriptedServer server;
  server.Set([](const http::Request& r) {
    const auto cont = r.QueryValue("continue");
    const std::string c = cont ? std::string(*cont) : "";
    const std::string next = c.empty() ? "p2" : c == "p2" ? "p3" : "";
    return JsonReply(200, R"({"metadata":{"resourceVersion":"100","continue":")" + next + R"("},"items":[{"n":")" +
                              (c.empty() ? "p1" : c) + R"("}]})");
  });
  auto client = MakeClient(server.Config());
  ListOptions lo;
  lo.resource_version = "0";
  auto all = client->ListAll(resources::kPods, "ml", lo);
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ((*all)["items"].size(), 3u);
  EXPECT_EQ((*all)["items"][2]["n"], "p3");
  EXPECT_EQ((*all)["metadata"]["resourceVersion"], "100");
  const auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(reqs[0].target, "/api/v1/namespaces/ml/pods?limit=500&resourceVersion=0");
  EXPECT_EQ(reqs[1].target, "/api/v1/namespaces/ml/pods?limit=500&continue=p2");
}

class KubeClientTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = phalanx::testing::GenerateTestCerts(dir_.path());
    ASSERT_TRUE(c.ok()) << c.status();
    certs_ = *c;
  }
  phalanx::testing::TempDir dir_;
  phalanx::testing::TestCerts certs_;
};

TEST_F(KubeClientTlsTest, MutualTlsWithInMemoryMaterial) {
  ScriptedServer server(http::TlsOptions{certs_.server_cert_file, certs_.server_key_file, certs_.ca_cert_file});
  ASSERT_TRUE(server.started().ok()) << server.started();
  KubeConfig config;
  config.server = server.url(/*https=*/true);
  config.ca_pem = certs_.ca_cert_pem;
  config.client_cert_pem = certs_.client_cert_pem;
  config.client_key_pem = certs_.client_key_pem;
  ClientOptions o;
  o.max_retries = 0;
  auto client = MakeClient(config, o);
  auto r = client->Get(resources::kNodes, "", "n1");
  EXPECT_TRUE(r.ok()) << r.status();

  KubeConfig no_cert = config;
  no_cert.client_cert_pem.clear();
  no_cert.client_key_pem.clear();
  auto refused = MakeClient(no_cert, o)->Get(resources::kNodes, "", "n1");
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable) << refused.status();
}

TEST_F(KubeClientTlsTest, ServerCertificateIsVerifiedUnlessInsecure) {
  ScriptedServer server(http::TlsOptions{certs_.server_cert_file, certs_.server_key_file, ""});
  ASSERT_TRUE(server.started().ok());
  ClientOptions o;
  o.max_retries = 0;
  KubeConfig config;
  config.server = server.url(true);
  auto other = phalanx::testing::GenerateTestCerts(dir_.path());  // a different CA
  ASSERT_TRUE(other.ok());
  config.ca_pem = other->ca_cert_pem;
  auto bad = MakeClient(config, o)->Get(resources::kNodes, "", "n1");
  EXPECT_EQ(bad.status().code(), StatusCode::kUnavailable) << bad.status();

  config.ca_pem.clear();
  config.insecure_skip_tls_verify = true;
  auto ok = MakeClient(config, o)->Get(resources::kNodes, "", "n1");
  EXPECT_TRUE(ok.ok()) << ok.status();
}

TEST(KubeClientCreateTest, BadTlsMaterialFailsAtCreation) {
  KubeConfig config;
  config.server = "https://127.0.0.1:1";
  config.ca_pem = "not a pem";
  auto c = KubeClient::Create(config);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace phalanx::kube
