// The real phalanx-extender binary serving the gang-gate admission webhook over HTTPS
// (--webhook-addr, extender/webhook/webhook_server.h): certificates are made here with the openssl
// CLI, and the client verifies the server as kube-apiserver does (CA bundle + DNS name).
#include <openssl/evp.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <gtest/gtest.h>

#include <filesystem>

#include "core/json/json.h"
#include "tests/integration/extender/extender_process.h"

namespace phalanx::extender::testing {
namespace {

using json::Json;

// One node, no pods: the webhook needs no cluster state.
std::string Snapshot() {
  Json node = {{"kind", "Node"},
               {"metadata", {{"name", "node-a"}, {"labels", {{"kubernetes.io/hostname", "node-a"}}}}},
               {"status", {{"allocatable", {{"nvidia.com/gpu", "8"}}}}}};
  return json::Dump(Json{{"kind", "List"}, {"items", {node}}});
}

int Openssl(const std::string& dir, const std::string& args) {
  std::string out;
  const int rc = RunCommand({"/bin/sh", "-c", "cd '" + dir + "' && openssl " + args}, &out, dir);
  EXPECT_EQ(rc, 0) << "openssl " << args << "\n" << out;
  return rc;
}

// <dir>/<name>-ca.crt signs <dir>/<name>.crt (SAN localhost, 127.0.0.1) with key <dir>/<name>.key.
void MakeCertificate(const std::string& dir, const std::string& name) {
  const std::string ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
  Openssl(dir, "req -x509 " + ec + " -keyout " + name + "-ca.key -out " + name + "-ca.crt -days 1 -subj /CN=" + name +
                   "-ca");
  Openssl(dir, "req " + ec + " -keyout " + name + ".key -out " + name + ".csr -subj /CN=localhost");
  WriteFile(dir + "/" + name + ".ext", "subjectAltName=DNS:localhost,IP:127.0.0.1\n");
  Openssl(dir, "x509 -req -in " + name + ".csr -CA " + name + "-ca.crt -CAkey " + name + "-ca.key -CAcreateserial -out " +
                   name + ".crt -days 1 -extfile " + name + ".ext");
}

struct TlsReply {
  int status = 0;  // 0 = no HTTP reply; see error
  std::string body;
  std::string error;
};

// POST over TLS, verifying the server certificate against `ca_file` for the name "localhost".
TlsReply Post(int port, const std::string& ca_file, const std::string& path, const std::string& body,
              const std::string& method = "POST") {
  namespace asio = boost::asio;
  namespace ssl = asio::ssl;
  namespace beast = boost::beast;
  namespace http = beast::http;
  try {
    asio::io_context io;
    ssl::context ctx(ssl::context::tls_client);
    ctx.load_verify_file(ca_file);
    ctx.set_verify_mode(ssl::verify_peer);
    beast::ssl_stream<beast::tcp_stream> stream(io, ctx);
    SSL_set_tlsext_host_name(stream.native_handle(), "localhost");
    stream.set_verify_callback(ssl::host_name_verification("localhost"));
    beast::get_lowest_layer(stream).expires_after(kHangDeadline);
    beast::get_lowest_layer(stream).connect(
        asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), static_cast<uint16_t>(port)));
    stream.handshake(ssl::stream_base::client);
    http::request<http::string_body> req{http::string_to_verb(method), path, 11};
    req.set(http::field::host, "localhost");
    req.set(http::field::content_type, "application/json");
    req.body() = body;
    req.prepare_payload();
    http::write(stream, req);
    beast::flat_buffer buffer;
    http::response<http::string_body> res;
    http::read(stream, buffer, res);
    return {static_cast<int>(res.result_int()), res.body(), ""};
  } catch (const std::exception& e) {
    return {0, "", e.what()};
  }
}

std::string Base64Decode(const std::string& in) {
  std::string out(in.size(), '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(in.data()), static_cast<int>(in.size()));
  if (n < 0) return "";
  out.resize(static_cast<size_t>(n));
  while (!in.empty() && !out.empty() && out.back() == '\0') out.pop_back();  // padding bytes
  return out;
}

Json Review(const std::string& uid, bool gang) {
  Json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"generateName", "llama-"}, {"namespace", "ml"}, {"labels", {{"app", "llama"}}}}},
              {"spec",
               {{"schedulerName", "phalanx-scheduler"},
                {"containers",
                 {{{"name", "trainer"}, {"image", "trainer:1"}, {"resources", {{"limits", {{"nvidia.com/gpu", "8"}}}}}}}}}}};
  if (gang) pod["metadata"]["labels"]["phalanx.io/gang"] = "llama-pretrain";
  return {{"apiVersion", "admission.k8s.io/v1"},
          {"kind", "AdmissionReview"},
          {"request",
           {{"uid", uid},
            {"kind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
            {"resource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
            {"namespace", "ml"},
            {"operation", "CREATE"},
            {"userInfo", {{"username", "system:serviceaccount:ml:launcher"}}},
            {"object", pod},
            {"oldObject", nullptr},
            {"dryRun", false},
            {"options", {{"apiVersion", "meta.k8s.io/v1"}, {"kind", "CreateOptions"}}}}}};
}

class WebhookTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    // A fresh directory: a stale log would hand WaitServing the ports of an earlier run.
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    MakeCertificate(dir_, "first");
  }

  // The extender with the webhook on an ephemeral port; its port from the "Webhook serving" line.
  void Start(const std::string& cert, const std::string& key) {
    process_ = std::make_unique<ExtenderProcess>(
        dir_, Snapshot(),
        std::vector<std::string>{"--webhook-addr", "127.0.0.1:0", "--webhook-tls-cert", cert, "--webhook-tls-key", key});
    ASSERT_TRUE(process_->WaitServing()) << process_->log();
    std::smatch m;
    const std::string log = process_->log();
    ASSERT_TRUE(std::regex_search(log, m, std::regex("Webhook serving.*webhook=\"?[0-9.]+:([0-9]+)"))) << log;
    port_ = std::stoi(m[1]);
  }

  std::string dir_;
  std::unique_ptr<ExtenderProcess> process_;
  int port_ = 0;
};

TEST_F(WebhookTlsTest, GatesAGangPodOverVerifiedTls) {
  Start(dir_ + "/first.crt", dir_ + "/first.key");
  const std::string ca = dir_ + "/first-ca.crt";

  const Json review = Review("uid-gang", true);
  TlsReply reply = Post(port_, ca, "/mutate-pods", json::Dump(review));
  ASSERT_EQ(reply.status, 200) << reply.error << reply.body;
  Json out = Json::parse(reply.body);
  EXPECT_EQ(out["apiVersion"], "admission.k8s.io/v1");
  EXPECT_EQ(out["kind"], "AdmissionReview");
  EXPECT_EQ(out["response"]["uid"], "uid-gang");
  EXPECT_EQ(out["response"]["allowed"], true);
  ASSERT_EQ(out["response"]["patchType"], "JSONPatch") << reply.body;
  Json pod = review["request"]["object"].patch(Json::parse(Base64Decode(out["response"]["patch"])));
  EXPECT_EQ(pod["spec"]["schedulingGates"], Json::parse(R"([{"name":"phalanx.io/gang"}])"));

  reply = Post(port_, ca, "/mutate-pods", json::Dump(Review("uid-solo", false)));
  ASSERT_EQ(reply.status, 200) << reply.error << reply.body;
  out = Json::parse(reply.body);
  EXPECT_EQ(out["response"]["uid"], "uid-solo");
  EXPECT_EQ(out["response"]["allowed"], true);
  EXPECT_FALSE(out["response"].contains("patch")) << reply.body;

  reply = Post(port_, ca, "/mutate-pods", R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"})");
  EXPECT_EQ(reply.status, 400) << reply.error << reply.body;
  EXPECT_NE(reply.body.find("request"), std::string::npos) << reply.body;
  EXPECT_EQ(Post(port_, ca, "/mutate-pods", "", "GET").status, 405);
  EXPECT_EQ(Post(port_, ca, "/v1/filter", "{}").status, 404) << "verbs are not on the webhook port";

  // No cleartext on the webhook port.
  EXPECT_NE(HttpCall(port_, "POST", "/mutate-pods", json::Dump(review)).status, 200);

  const std::string metrics = HttpCall(process_->metrics_port(), "GET", "/metrics").body;
  EXPECT_NE(metrics.find("phalanx_extender_webhook_reviews_total{result=\"gated\"} 1"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("phalanx_extender_webhook_reviews_total{result=\"unchanged\"} 1"), std::string::npos);
  EXPECT_NE(metrics.find("phalanx_extender_webhook_reviews_total{result=\"rejected\"} 1"), std::string::npos);
  EXPECT_EQ(process_->Stop(), std::optional<int>(0)) << process_->log();
}

TEST_F(WebhookTlsTest, ARenewedCertificateIsServedWithoutARestart) {
  // The mounted files are replaced as kubelet does (new inode), not rewritten in place.
  const std::string cert = dir_ + "/tls.crt", key = dir_ + "/tls.key";
  std::filesystem::copy_file(dir_ + "/first.crt", cert);
  std::filesystem::copy_file(dir_ + "/first.key", key);
  Start(cert, key);
  ASSERT_EQ(Post(port_, dir_ + "/first-ca.crt", "/mutate-pods", json::Dump(Review("u1", true))).status, 200);

  // A key that does not match the certificate is refused; the old pair keeps serving.
  MakeCertificate(dir_, "second");
  std::filesystem::copy_file(dir_ + "/second.key", dir_ + "/next.key");
  std::filesystem::rename(dir_ + "/next.key", key);
  EXPECT_TRUE(WaitUntil([&] { return process_->log().find("does not load") != std::string::npos; }))
      << process_->log();
  EXPECT_EQ(Post(port_, dir_ + "/first-ca.crt", "/mutate-pods", json::Dump(Review("u2", true))).status, 200);

  std::filesystem::copy_file(dir_ + "/second.crt", dir_ + "/next.crt");
  std::filesystem::rename(dir_ + "/next.crt", cert);
  EXPECT_TRUE(WaitUntil([&] {
    return Post(port_, dir_ + "/second-ca.crt", "/mutate-pods", json::Dump(Review("u3", true))).status == 200;
  })) << process_->log();
  const TlsReply old = Post(port_, dir_ + "/first-ca.crt", "/mutate-pods", json::Dump(Review("u4", true)));
  EXPECT_EQ(old.status, 0) << "the old certificate is still served";
  EXPECT_TRUE(process_->running()) << process_->log();
  EXPECT_EQ(process_->Stop(), std::optional<int>(0)) << process_->log();
}

TEST_F(WebhookTlsTest, BadWebhookFlagsStopTheStartNamingTheFlag) {
  MakeCertificate(dir_, "second");
  struct Case {
    const char* name;
    std::vector<std::string> flags;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"key of another certificate",
       {"--webhook-addr", "127.0.0.1:0", "--webhook-tls-cert", dir_ + "/first.crt", "--webhook-tls-key",
        dir_ + "/second.key"},
       "--webhook-tls-cert/--webhook-tls-key: TLS private key"},
      {"no key", {"--webhook-addr", "127.0.0.1:0", "--webhook-tls-cert", dir_ + "/first.crt"},
       "--webhook-addr needs --webhook-tls-key"},
      {"no address", {"--webhook-tls-cert", dir_ + "/first.crt", "--webhook-tls-key", dir_ + "/first.key"},
       "need --webhook-addr"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ExtenderProcess p(dir_, Snapshot(), c.flags);
    ASSERT_TRUE(WaitUntil([&] { return !p.running(); })) << p.log();
    EXPECT_EQ(p.exit_code(), 2) << p.log();
    EXPECT_NE(p.log().find(c.message), std::string::npos) << p.log();
  }
}

}  // namespace
}  // namespace phalanx::extender::testing
