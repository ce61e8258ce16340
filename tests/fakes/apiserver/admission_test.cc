// The fake's mutating admission (mutating_admission.h) against a real HTTPS webhook: the
// patch applied, selectors, failurePolicy, the CA check, a refusal, timeoutSeconds.
#include <gtest/gtest.h>

#include <openssl/evp.h>

#include <atomic>
#include <thread>

#include "core/http/http_server.h"
#include "core/json/json.h"
#include "core/kube/client.h"
#include "tests/fakes/apiserver/fake_apiserver.h"
#include "tests/unit/core/http/test_certs.h"

namespace phalanx::fakes::apiserver {
namespace {

using json::Json;

std::string B64(const std::string& in) {
  std::string out(4 * ((in.size() + 2) / 3), '\0');
  out.resize(static_cast<size_t>(EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                                 reinterpret_cast<const unsigned char*>(in.data()),
                                                 static_cast<int>(in.size()))));
  return out;
}

class AdmissionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto certs = phalanx::testing::GenerateTestCerts(dir_.path());
    ASSERT_TRUE(certs.ok()) << certs.status();
    certs_ = *certs;
    http::ServerOptions so;
    so.tls = http::TlsOptions{certs_.server_cert_file, certs_.server_key_file, ""};
    webhook_ = std::make_unique<http::HttpServer>(so);
    webhook_->Handle("POST", "/mutate", http::SyncHandler([this](const http::Request& req) {
                       calls_++;
                       if (hang_) std::this_thread::sleep_for(std::chrono::milliseconds(2500));
                       auto review = json::Parse(req.body);
                       Json response = {{"uid", (*review)["request"]["uid"]}, {"allowed", !deny_}};
                       if (deny_) response["status"] = {{"code", 403}, {"message", "no GPUs for you"}};
                       if (!deny_) {
                         response["patchType"] = "JSONPatch";
                         response["patch"] = B64(R"([{"op":"add","path":"/metadata/annotations","value":{"seen":"yes"}}])");
                       }
                       http::Response r;
                       r.body = json::Dump(Json{{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"},
                                                {"response", response}});
                       return r;
                     }));
    ASSERT_TRUE(webhook_->Start().ok());
    auto server = FakeApiServer::Start();
    ASSERT_TRUE(server.ok());
    server_ = std::move(*server);
    ASSERT_TRUE(server_->Create("namespaces", {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "ml"}}}}).ok());
  }

  // One webhook by URL (https://127.0.0.1:PORT/mutate, verified for the IP), for pods labelled gang.
  void Configure(const std::string& failure_policy, const std::string& ca_pem, int timeout_seconds = 5,
                 const Json& namespace_selector = Json()) {
    Json hook = {{"name", "test.phalanx.io"},
                 {"admissionReviewVersions", {"v1"}},
                 {"sideEffects", "None"},
                 {"failurePolicy", failure_policy},
                 {"timeoutSeconds", timeout_seconds},
                 {"objectSelector", {{"matchLabels", {{"gang", "yes"}}}}},
                 {"rules", {{{"operations", {"CREATE"}}, {"apiGroups", {""}}, {"apiVersions", {"v1"}}, {"resources", {"pods"}}}}},
                 {"clientConfig",
                  {{"url", "https://127.0.0.1:" + std::to_string(webhook_->port()) + "/mutate"}, {"caBundle", B64(ca_pem)}}}};
    if (!namespace_selector.is_null()) hook["namespaceSelector"] = namespace_selector;
    (void)server_->Delete("mutatingwebhookconfigurations.admissionregistration.k8s.io", "", "test");
    ASSERT_TRUE(server_
                    ->Create("mutatingwebhookconfigurations.admissionregistration.k8s.io",
                             {{"apiVersion", "admissionregistration.k8s.io/v1"},
                              {"kind", "MutatingWebhookConfiguration"},
                              {"metadata", {{"name", "test"}}},
                              {"webhooks", {hook}}})
                    .ok());
  }

  // POST over HTTP, as a client: admission runs.
  std::pair<int, Json> CreatePod(const std::string& name, bool gang) {
    Json pod = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata", {{"name", name}, {"labels", {{"gang", gang ? "yes" : "no"}}}}},
                {"spec", {{"containers", {{{"name", "c"}, {"image", "i"}}}}}}};
    kube::KubeConfig config;
    config.server = server_->url();
    auto client = kube::KubeClient::Create(config, {.max_retries = 0});
    auto created = (*client)->Create(kube::resources::kPods, "ml", pod);
    if (created.ok()) return {201, *created};
    return {0, Json{{"error", std::string(created.status().message())}}};  // refused
  }

  phalanx::testing::TempDir dir_;
  phalanx::testing::TestCerts certs_;
  std::unique_ptr<http::HttpServer> webhook_;
  std::unique_ptr<FakeApiServer> server_;
  std::atomic<int> calls_{0};
  std::atomic<bool> hang_{false}, deny_{false};
};

TEST_F(AdmissionTest, PatchesMatchingPodsOverVerifiedTls) {
  Configure("Fail", certs_.ca_cert_pem);
  auto [code, pod] = CreatePod("gang-0", true);
  ASSERT_EQ(code, 201) << pod.dump();
  EXPECT_EQ(pod["metadata"]["annotations"]["seen"], "yes");
  auto [code2, plain] = CreatePod("plain-0", false);  // objectSelector: not sent
  ASSERT_EQ(code2, 201);
  EXPECT_FALSE(plain["metadata"].contains("annotations"));
  EXPECT_EQ(calls_.load(), 1);
  // namespaceSelector on kubernetes.io/metadata.name, which every namespace carries.
  Configure("Fail", certs_.ca_cert_pem, 5,
            Json{{"matchExpressions", {{{"key", "kubernetes.io/metadata.name"}, {"operator", "NotIn"}, {"values", {"ml"}}}}}});
  EXPECT_EQ(CreatePod("gang-1", true).first, 201);
  EXPECT_EQ(calls_.load(), 1);
}

TEST_F(AdmissionTest, AnUntrustedCertificateFailsTheCallAndFailurePolicyDecides) {
  phalanx::testing::TempDir other_dir;
  auto other = phalanx::testing::GenerateTestCerts(other_dir.path());
  ASSERT_TRUE(other.ok());
  Configure("Ignore", other->ca_cert_pem);  // a CA that did not sign the server's certificate
  auto [code, pod] = CreatePod("gang-0", true);
  ASSERT_EQ(code, 201) << "Ignore admits the pod unchanged";
  EXPECT_FALSE(pod["metadata"].contains("annotations"));
  Configure("Fail", other->ca_cert_pem);
  auto [refused, why] = CreatePod("gang-1", true);
  EXPECT_NE(refused, 201) << why.dump();
  EXPECT_NE(why.dump().find("failed calling webhook"), std::string::npos) << why.dump();
  const auto calls = server_->WebhookCalls();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].outcome.rfind("ignored: ", 0), 0u) << calls[0].outcome;
  EXPECT_EQ(calls[1].outcome.rfind("failed: ", 0), 0u) << calls[1].outcome;
  EXPECT_EQ(calls_.load(), 0) << "the handshake failed before any request";
}

TEST_F(AdmissionTest, ARefusalIsTheWebhooksAnswerAndATimeoutIsAFailedCall) {
  Configure("Fail", certs_.ca_cert_pem);
  deny_ = true;
  auto [code, why] = CreatePod("gang-0", true);
  EXPECT_NE(code, 201);
  EXPECT_NE(why.dump().find("denied the request: no GPUs for you"), std::string::npos) << why.dump();
  deny_ = false;
  hang_ = true;
  Configure("Ignore", certs_.ca_cert_pem, 1);
  const auto start = std::chrono::steady_clock::now();
  auto [late, pod] = CreatePod("gang-1", true);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(late, 201);
  EXPECT_FALSE(pod["metadata"].contains("annotations"));
  EXPECT_LT(took, std::chrono::milliseconds(2400)) << "timeoutSeconds 1 bounds the call";
}

}  // namespace
}  // namespace phalanx::fakes::apiserver
