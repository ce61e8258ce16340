// HttpServer over TLS: server certificates, mutual TLS, and configuration errors.
#include <cpprest/http_client.h>
#include <gtest/gtest.h>

#include <atomic>

#include "core/http/http_server.h"
#include "tests/unit/core/http/test_certs.h"

namespace phalanx::http {
namespace {

using phalanx::testing::GenerateTestCerts;
using phalanx::testing::TempDir;
using phalanx::testing::TestCerts;
using web::http::methods;
using web::http::client::http_client;
using web::http::client::http_client_config;

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    auto certs = GenerateTestCerts(dir_.path());
    ASSERT_TRUE(certs.ok()) << certs.status();
    certs_ = *certs;
  }

  void StartServer(bool require_client_cert) {
    ServerOptions options;
    options.tls = TlsOptions{certs_.server_cert_file, certs_.server_key_file,
                             require_client_cert ? certs_.ca_cert_file : ""};
    server_ = std::make_unique<HttpServer>(options);
    server_->Handle("GET", "/secure", SyncHandler([this](const Request&) {
                      ++calls_;
                      return Response{200, "text/plain", {}, "secret"};
                    }));
    ASSERT_TRUE(server_->Start().ok());
  }

  // A client trusting `ca_file`, presenting the client certificate when `cert_dir_certs` is set.
  http_client Client(const std::string& ca_file, const TestCerts* client_cert) {
    http_client_config config;
    config.set_timeout(std::chrono::seconds(20));
    config.set_ssl_context_callback([ca_file, client_cert](boost::asio::ssl::context& ctx) {
      ctx.load_verify_file(ca_file);
      if (client_cert != nullptr) {
        ctx.use_certificate_chain_file(client_cert->client_cert_file);
        ctx.use_private_key_file(client_cert->client_key_file, boost::asio::ssl::context::pem);
      }
    });
    return http_client("https://localhost:" + std::to_string(server_->port()), config);
  }

  TempDir dir_;
  TestCerts certs_;
  std::unique_ptr<HttpServer> server_;
  std::atomic<int> calls_{0};
};

TEST_F(TlsTest, ServesHttpsVerifiedAgainstTheCa) {
  StartServer(/*require_client_cert=*/false);
  http_client client = Client(certs_.ca_cert_file, nullptr);
  auto response = client.request(methods::GET, "/secure").get();
  EXPECT_EQ(response.status_code(), 200);
  EXPECT_EQ(response.extract_string().get(), "secret");
}

TEST_F(TlsTest, ClientThatDoesNotTrustTheCaFails) {
  StartServer(/*require_client_cert=*/false);
  TempDir other_dir;
  auto other = GenerateTestCerts(other_dir.path());
  ASSERT_TRUE(other.ok()) << other.status();
  http_client client = Client(other->ca_cert_file, nullptr);
  EXPECT_THROW(client.request(methods::GET, "/secure").get(), web::http::http_exception);
  EXPECT_EQ(calls_.load(), 0);
}

TEST_F(TlsTest, MutualTlsAcceptsClientWithCertificateFromTheCa) {
  StartServer(/*require_client_cert=*/true);
  http_client client = Client(certs_.ca_cert_file, &certs_);
  auto response = client.request(methods::GET, "/secure").get();
  EXPECT_EQ(response.status_code(), 200);
  EXPECT_EQ(response.extract_string().get(), "secret");
}

TEST_F(TlsTest, MutualTlsRejectsClientWithoutCertificate) {
  StartServer(/*require_client_cert=*/true);
  http_client client = Client(certs_.ca_cert_file, nullptr);
  EXPECT_THROW(client.request(methods::GET, "/secure").get(), web::http::http_exception);
  EXPECT_EQ(calls_.load(), 0);
}

TEST_F(TlsTest, MutualTlsRejectsCertificateFromAnotherCa) {
  StartServer(/*require_client_cert=*/true);
  TempDir other_dir;
  auto other = GenerateTestCerts(other_dir.path());
  ASSERT_TRUE(other.ok()) << other.status();
  http_client client = Client(certs_.ca_cert_file, &*other);
  EXPECT_THROW(client.request(methods::GET, "/secure").get(), web::http::http_exception);
  EXPECT_EQ(calls_.load(), 0);
}

TEST_F(TlsTest, StartFailsForMissingCertificateFile) {
  ServerOptions options;
  options.tls = TlsOptions{dir_.path() + "/missing.pem", certs_.server_key_file, ""};
  HttpServer server(options);
  const Status status = server.Start();
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("TLS certificate " + dir_.path() + "/missing.pem"),
            std::string::npos)
      << status;
}

TEST_F(TlsTest, StartFailsWhenKeyDoesNotMatchCertificate) {
  ServerOptions options;
  options.tls = TlsOptions{certs_.server_cert_file, certs_.client_key_file, ""};
  HttpServer server(options);
  const Status status = server.Start();
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("TLS private key " + certs_.client_key_file), std::string::npos)
      << status;
}

}  // namespace
}  // namespace phalanx::http
