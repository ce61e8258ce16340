// The self-managed webhook certificate (extender/webhook/webhook_cert_rotator.h) against the in-process
// fake API server, which calls the webhook as kube-apiserver does (MutatingWebhookConfiguration,
// Service -> Endpoints, TLS verified against caBundle for <svc>.<ns>.svc): replicas racing on
// an empty Secret converge on one pair, and a CA rotation keeps the old CA trusted while the
// webhook keeps gating pods, refusing none while it swaps certificates.
#include <gtest/gtest.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <fmt/format.h>

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

// The certificate (PEM) the listener on 127.0.0.1:`port` hands a new connection; "" when the
// connection or the handshake fails.
std::string ServedCertificate(uint16_t port) {
  namespace asio = boost::asio;
  namespace ssl = asio::ssl;
  asio::io_context io;
  ssl::context ctx(ssl::context::tls_client);
  ssl::stream<asio::ip::tcp::socket> stream(io, ctx);
  boost::system::error_code ec;
  stream.next_layer().connect({asio::ip::make_address("127.0.0.1"), port}, ec);
  if (!ec) stream.handshake(ssl::stream_base::client, ec);
  if (ec) return "";
  std::unique_ptr<X509, decltype(&X509_free)> cert(SSL_get1_peer_certificate(stream.native_handle()), X509_free);
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), BIO_free);
  if (!cert || !bio || PEM_write_bio_X509(bio.get(), cert.get()) != 1) return "";
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(size));
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

  // Clients create gang pods back to back from before the CA rotation until a while after the
  // listener serves the new pair: the swap must refuse none of them (failurePolicy Fail turns a
  // failed webhook call into a refused create). A listener that restarted to reload closed its
  // port for that instant.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  std::atomic<bool> swapped{false};
  std::atomic<int> created{0}, ungated{0}, refused{0};
  std::mutex refusal_mu;
  std::string first_refusal;  // guarded by refusal_mu
  std::vector<std::thread> clients;
  for (int c = 0; c < 4; ++c) {
    clients.emplace_back([&, c] {
      for (int i = 0, after_swap = 0; after_swap < 10 && std::chrono::steady_clock::now() < deadline; ++i) {
        if (swapped.load()) ++after_swap;
        auto pod = CreatePod(Pod("ml", fmt::format("during-{}-{}", c, i), true));
        if (!pod.ok()) {
          std::lock_guard lock(refusal_mu);
          if (refused++ == 0) first_refusal = pod.status().ToString();
          continue;
        }
        ++created;
        if (!Gated(*pod)) ++ungated;
      }
    });
  }

  // Minute 35: the CA is due (it ends at minute 40). After the pass: a new CA, both CAs in the configuration's bundle
  // (a replica still serving `old_serving` keeps working), and this replica's certificate from
  // the new CA.
  ahead_minutes = 35;
  EXPECT_TRUE(rotator.ReconcileOnce().ok());  // not ASSERT: the clients are to be joined
  data = (*server_->Get("secrets", kNs, kSecret))["data"];
  const std::string new_ca = Decode(data, "ca-signer.crt");
  // The listener swaps in the new pair (polled every 50 ms).
  while (!swapped.load() && std::chrono::steady_clock::now() < deadline) {
    if (SignedBy(ServedCertificate(webhook->port()), new_ca)) {
      swapped = true;
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  for (auto& t : clients) t.join();
  EXPECT_TRUE(swapped.load()) << "the listener never served the certificate from the new CA";
  EXPECT_EQ(refused.load(), 0) << "creates refused while the listener swapped certificates, first: "
                               << first_refusal;
  EXPECT_GT(created.load(), 0);
  EXPECT_EQ(ungated.load(), 0);
  EXPECT_NE(new_ca, first_ca);
  auto config = server_->Get("mutatingwebhookconfigurations.admissionregistration.k8s.io", "", kConfig);
  const auto trusted = SplitPemBundle(Decode((*config)["webhooks"][0]["clientConfig"], "caBundle"));
  EXPECT_EQ(trusted, (std::vector<std::string>{new_ca, first_ca}));
  EXPECT_TRUE(SignedBy(old_serving, first_ca));
  const std::string serving = Decode(data, "tls.crt");
  EXPECT_TRUE(SignedBy(serving, new_ca));
  EXPECT_EQ(ReadText((dir_ / "a" / "tls.crt").string()), serving);

  // After the swap the API server (trusting both CAs) still gets the gate.
  auto after = CreatePod(Pod("ml", "after", true));
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_TRUE(Gated(*after));
  for (const auto& call : server_->WebhookCalls()) EXPECT_EQ(call.outcome, "patched");
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
