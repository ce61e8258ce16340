// The self-managed webhook certificate (extender/webhook/webhook_cert_rotator.h) against the in-process
// fake API server, which calls the webhook as kube-apiserver does (MutatingWebhookConfiguration,
// Service -> Endpoints, TLS verified against caBundle for <svc>.<ns>.svc): replicas racing on
// an empty Secret converge on one pair, and a CA rotation keeps the old CA trusted while the
// webhook keeps gating pods.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/kube/client.h"
#include "extender/webhook/webhook_cert_rotator.h"
#include "extender/webhook/webhook_server.h"
#include "tests/fakes/apiserver/fake_apiserver.h"

namespace phalanx::extender {
namespace {

using fakes::apiserver::FakeApiServer;
using json::Json;
using std::chrono::minutes;

constexpr const char* kNs = "phalanx-system";
constexpr const char* kService = "phalanx-scheduler";
constexpr const char* kSecret = "phalanx-scheduler-webhook-certs";
constexpr const char* kConfig = "phalanx-scheduler-gang-gate";

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Decode(const Json& data, const char* key) {
  auto d = kube::Base64Decode(data.value(key, ""));
  return d.ok() ? *d : "";
}

Json Configuration() {
  Json hook = {{"name", "gang-gate.phalanx.io"},
               {"admissionReviewVersions", {"v1"}},
               {"sideEffects", "None"},
               {"failurePolicy", "Fail"},  // a failed call shows as a refused create here
               {"timeoutSeconds", 5},
               {"namespaceSelector",
                {{"matchExpressions", {{{"key", "kubernetes.io/metadata.name"}, {"operator", "NotIn"}, {"values", {kNs}}}}}}},
               {"objectSelector", {{"matchExpressions", {{{"key", "phalanx.io/gang"}, {"operator", "Exists"}}}}}},
               {"rules",
                {{{"operations", {"CREATE"}}, {"apiGroups", {""}}, {"apiVersions", {"v1"}}, {"resources", {"pods"}},
                  {"scope", "Namespaced"}}}},
               {"clientConfig", {{"service", {{"name", kService}, {"namespace", kNs}, {"path", "/mutate-pods"}, {"port", 443}}}}}};
  return {{"apiVersion", "admissionregistration.k8s.io/v1"},
          {"kind", "MutatingWebhookConfiguration"},
          {"metadata", {{"name", kConfig}}},
          {"webhooks", {hook}}};
}

Json Pod(const std::string& ns, const std::string& name, bool gang) {
  Json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", name}, {"namespace", ns}, {"labels", Json::object()}}},
              {"spec",
               {{"schedulerName", "phalanx-scheduler"},
                {"containers",
                 {{{"name", "c"}, {"image", "trainer:1"}, {"resources", {{"limits", {{"nvidia.com/gpu", "8"}}}}}}}}}}};
  if (gang) pod["metadata"]["labels"]["phalanx.io/gang"] = "llm";
  return pod;
}

bool Gated(const Json& pod) {
  for (const auto& g : pod["spec"].value("schedulingGates", Json::array())) {
    if (g.value("name", "") == "phalanx.io/gang") return true;
  }
  return false;
}

class WebhookCertRotatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto started = FakeApiServer::Start();
    ASSERT_TRUE(started.ok()) << started.status();
    server_ = std::move(started).value();
    for (const char* ns : {kNs, "ml"}) {
      ASSERT_TRUE(server_->Create("namespaces", {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}}).ok());
    }
    ASSERT_TRUE(server_->Create("mutatingwebhookconfigurations.admissionregistration.k8s.io", Configuration()).ok());
    ASSERT_TRUE(server_->Create("services", {{"apiVersion", "v1"},
                                             {"kind", "Service"},
                                             {"metadata", {{"name", kService}, {"namespace", kNs}}},
                                             {"spec", {{"ports", {{{"name", "webhook"}, {"port", 443}, {"targetPort", "webhook"}}}}}}})
                    .ok());
    kube::KubeConfig config;
    config.server = server_->url();
    config.token = "fake-token";
    kube::ClientOptions options;
    options.qps = 1000;
    options.burst = 1000;
    auto client = kube::KubeClient::Create(config, options);
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = std::move(*client);
    dir_ = std::filesystem::path(::testing::TempDir()) / ("phx-whrot-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  WebhookCertOptions Options(const std::string& replica) {
    auto options = WebhookCertOptionsFromFlags(std::string(kNs) + "/" + kSecret, kConfig, kService,
                                               (dir_ / replica).string(), "20m", "40m", "5m");
    EXPECT_TRUE(options.ok()) << options.status().message();
    return options.ok() && options->has_value() ? **options : WebhookCertOptions{};
  }

  // Serves the webhook from `cert_dir` and points the Service's Endpoints at it.
  std::unique_ptr<WebhookServer> Serve(const std::string& cert_dir) {
    auto options = WebhookOptionsForManagedCerts("127.0.0.1:0", cert_dir, "phalanx-scheduler");
    EXPECT_TRUE(options.ok());
    options->cert_poll = std::chrono::milliseconds(50);
    auto webhook = std::make_unique<WebhookServer>(*options, registry_);
    EXPECT_TRUE(webhook->Start().ok());
    Json endpoints = {{"apiVersion", "v1"},
                      {"kind", "Endpoints"},
                      {"metadata", {{"name", kService}, {"namespace", kNs}}},
                      {"subsets",
                       {{{"addresses", {{{"ip", "127.0.0.1"}}}},
                         {"ports", {{{"name", "webhook"}, {"port", webhook->port()}}}}}}}};
    EXPECT_TRUE(server_->Seed(endpoints).ok());
    return webhook;
  }

  // Creates the pod through HTTP (so admission runs), as a client would.
  Result<Json> CreatePod(const Json& pod) {
    return client_->Create(kube::resources::kPods, pod["metadata"]["namespace"].get<std::string>(), pod);
  }

  std::unique_ptr<FakeApiServer> server_;
  std::unique_ptr<kube::KubeClient> client_;
  std::filesystem::path dir_;
  metrics::Registry registry_;
};

TEST_F(WebhookCertRotatorTest, ReplicasRacingOnAnEmptySecretServeOnePairTheApiServerTrusts) {
  constexpr int kReplicas = 3;
  std::vector<std::unique_ptr<WebhookCertRotator>> rotators;
  for (int i = 0; i < kReplicas; ++i) {
    rotators.push_back(std::make_unique<WebhookCertRotator>(*client_, Options("r" + std::to_string(i)), nullptr));
  }
  std::vector<Status> results(kReplicas, OkStatus());
  {
    std::vector<std::thread> threads;
    for (int i = 0; i < kReplicas; ++i) threads.emplace_back([&, i] { results[i] = rotators[i]->ReconcileOnce(); });
    for (auto& t : threads) t.join();
  }
  for (const auto& st : results) EXPECT_TRUE(st.ok()) << st.message();
  auto secret = server_->Get("secrets", kNs, kSecret);
  ASSERT_TRUE(secret.ok()) << secret.status();
  const Json data = (*secret)["data"];
  const std::string bundle = Decode(data, "ca.crt");
  ASSERT_EQ(SplitPemBundle(bundle).size(), 1u) << "one CA, however many replicas raced";
  for (int i = 0; i < kReplicas; ++i) {
    EXPECT_EQ(ReadText((dir_ / ("r" + std::to_string(i)) / "tls.crt").string()), Decode(data, "tls.crt"));
    EXPECT_EQ(ReadText((dir_ / ("r" + std::to_string(i)) / "tls.key").string()), Decode(data, "tls.key"));
  }
  auto config = server_->Get("mutatingwebhookconfigurations.admissionregistration.k8s.io", "", kConfig);
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(Decode((*config)["webhooks"][0]["clientConfig"], "caBundle"), bundle);

  // A second pass changes nothing (no write).
  const std::string rv = (*secret)["metadata"]["resourceVersion"];
  EXPECT_TRUE(rotators[0]->ReconcileOnce().ok());
  EXPECT_EQ((*server_->Get("secrets", kNs, kSecret))["metadata"]["resourceVersion"], rv);

  // The API server calls replica 1 over TLS, trusting the CA bundle, and gets the gate.
  auto webhook = Serve((dir_ / "r1").string());
  auto gang = CreatePod(Pod("ml", "gang-0", true));
  ASSERT_TRUE(gang.ok()) << gang.status();
  EXPECT_TRUE(Gated(*gang)) << gang->dump();
  auto plain = CreatePod(Pod("ml", "plain-0", false));
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_FALSE(Gated(*plain));
  auto own = CreatePod(Pod(kNs, "own-0", true));  // the release namespace is excluded
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_FALSE(Gated(*own));
  const auto calls = server_->WebhookCalls();
  ASSERT_EQ(calls.size(), 1u) << "only the labelled pod outside the excluded namespace reaches the webhook";
  EXPECT_EQ(calls[0].outcome, "patched");
}

TEST_F(WebhookCertRotatorTest, CaRotationKeepsTheOldCaTrustedAndTheWebhookKeepsGating) {
  // A clock that runs ahead of the real one by less than the 1 h backdating, so that the
  // certificates it makes are valid for the real TLS handshake too.
  std::atomic<int> ahead_minutes{0};
  WebhookCertOptions options = Options("a");
  options.now = [&] { return std::chrono::system_clock::now() + minutes(ahead_minutes.load()); };
  WebhookCertRotator rotator(*client_, options, nullptr);
  ASSERT_TRUE(rotator.ReconcileOnce().ok());
  auto webhook = Serve((dir_ / "a").string());
  ASSERT_TRUE(CreatePod(Pod("ml", "before", true)).ok());
  const std::string first_ca = Decode((*server_->Get("secrets", kNs, kSecret))["data"], "ca-signer.crt");

  // Minute 16 of a 20-minute certificate (renewed 5 minutes before): a new serving certificate,
  // same CA, until minute 36 (the CA's end is minute 40).
  ahead_minutes = 16;
  ASSERT_TRUE(rotator.ReconcileOnce().ok());
  Json data = (*server_->Get("secrets", kNs, kSecret))["data"];
  EXPECT_EQ(Decode(data, "ca-signer.crt"), first_ca);
  const std::string old_serving = Decode(data, "tls.crt");

  // Minute 35: the CA is due (it ends at minute 40). After the pass: a new CA, both CAs in the configuration's bundle
  // (a replica still serving `old_serving` keeps working), and this replica's certificate from
  // the new CA.
  ahead_minutes = 35;
  ASSERT_TRUE(rotator.ReconcileOnce().ok());
  data = (*server_->Get("secrets", kNs, kSecret))["data"];
  const std::string new_ca = Decode(data, "ca-signer.crt");
  EXPECT_NE(new_ca, first_ca);
  auto config = server_->Get("mutatingwebhookconfigurations.admissionregistration.k8s.io", "", kConfig);
  const auto trusted = SplitPemBundle(Decode((*config)["webhooks"][0]["clientConfig"], "caBundle"));
  EXPECT_EQ(trusted, (std::vector<std::string>{new_ca, first_ca}));
  EXPECT_TRUE(SignedBy(old_serving, first_ca));
  const std::string serving = Decode(data, "tls.crt");
  EXPECT_TRUE(SignedBy(serving, new_ca));
  EXPECT_EQ(ReadText((dir_ / "a" / "tls.crt").string()), serving);

  // The listener reloads the new pair; the API server (trusting both CAs) still gets the gate.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  bool gated = false;
  // Known gap (open in issue 27's notes): the listener restarts to load the new pair, so a create
  // that lands in that window finds the port closed; with this test's failurePolicy Fail it is
  // refused (the chart's Ignore would admit it ungated, for the filter-time fallback).
  int refused_in_reload = 0;
  for (int i = 0; !gated && std::chrono::steady_clock::now() < deadline; ++i) {
    auto pod = CreatePod(Pod("ml", "after-" + std::to_string(i), true));
    if (!pod.ok()) {
      EXPECT_NE(pod.status().message().find("failed calling webhook"), std::string::npos) << pod.status();
      ++refused_in_reload;
      continue;
    }
    gated = Gated(*pod);
  }
  EXPECT_TRUE(gated);
  EXPECT_LE(refused_in_reload, 3) << "more than a restart's window";
  for (const auto& call : server_->WebhookCalls()) {
    if (call.outcome != "patched") {
      EXPECT_GT(refused_in_reload, 0) << call.outcome;
    }
  }
}

TEST_F(WebhookCertRotatorTest, AStaleUpdateOfTheSecretIsAConflict) {
  WebhookCertRotator rotator(*client_, Options("a"), nullptr);
  ASSERT_TRUE(rotator.ReconcileOnce().ok());
  auto secret = server_->Get("secrets", kNs, kSecret);
  ASSERT_TRUE(secret.ok());
  Json stale = *secret;
  stale["data"]["tls.crt"] = "";
  ASSERT_TRUE(server_->Update("secrets", stale).ok());
  // The first writer moved the version on: the same write again is refused with 409.
  auto again = client_->Update(kube::resources::kSecrets, kNs, stale);
  ASSERT_FALSE(again.ok());
  EXPECT_TRUE(kube::IsConflict(again.status())) << again.status();
  // And the rotator repairs the emptied certificate.
  ASSERT_TRUE(rotator.ReconcileOnce().ok());
  EXPECT_FALSE(Decode((*server_->Get("secrets", kNs, kSecret))["data"], "tls.crt").empty());
}

}  // namespace
}  // namespace phalanx::extender
