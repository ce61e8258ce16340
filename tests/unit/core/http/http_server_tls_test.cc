// HttpServer over TLS: server certificates, mutual TLS, certificate reload, configuration errors.
#include <cpprest/http_client.h>
#include <gtest/gtest.h>
#include <openssl/ssl.h>

#include <atomic>
#include <filesystem>
#include <optional>

#include <boost/asio/ssl.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

#include "core/http/http_server.h"
#include "tests/unit/core/http/test_certs.h"
#include "tests/unit/core/http/test_client.h"

namespace phalanx::http {
namespace {

using phalanx::testing::GenerateTestCerts;
using phalanx::testing::TempDir;
using phalanx::testing::TestCerts;
using web::http::methods;
using web::http::client::http_client;
using web::http::client::http_client_config;

// One TLS connection kept open across requests (keep-alive), verifying the server as localhost
// against a CA file. Every operation has kTestDeadline.
class TlsConnection {
 public:
  // False when the connection or the handshake (certificate verification) fails.
  bool Open(uint16_t port, const std::string& ca_file) {
    boost::system::error_code ec;
    ctx_.load_verify_file(ca_file, ec);
    if (ec) return false;
    ctx_.set_verify_mode(boost::asio::ssl::verify_peer);
    stream_.emplace(io_, ctx_);
    SSL_set_tlsext_host_name(stream_->native_handle(), "localhost");
    stream_->set_verify_callback(boost::asio::ssl::host_name_verification("localhost"));
    auto& tcp = boost::beast::get_lowest_layer(*stream_);
    tcp.expires_after(testing::kTestDeadline);
    tcp.socket().connect({boost::asio::ip::make_address("127.0.0.1"), port}, ec);
    if (!ec) stream_->handshake(boost::asio::ssl::stream_base::client, ec);
    return !ec;
  }

  // The status of GET `path` on this connection; 0 when the exchange fails.
  int Get(const std::string& path) {
    namespace bhttp = boost::beast::http;
    if (!stream_) return 0;
    boost::beast::get_lowest_layer(*stream_).expires_after(testing::kTestDeadline);
    bhttp::request<bhttp::empty_body> request{bhttp::verb::get, path, 11};
    request.set(bhttp::field::host, "localhost");
    boost::system::error_code ec;
    bhttp::write(*stream_, request, ec);
    boost::beast::flat_buffer buffer;
    bhttp::response<bhttp::string_body> response;
    if (!ec) bhttp::read(*stream_, buffer, response, ec);
    return ec ? 0 : static_cast<int>(response.result_int());
  }

 private:
  boost::asio::io_context io_;
  boost::asio::ssl::context ctx_{boost::asio::ssl::context::tls_client};
  std::optional<boost::beast::ssl_stream<boost::beast::tcp_stream>> stream_;
};

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

TEST_F(TlsTest, ReloadServesTheRenewedPairToNewConnectionsAndKeepsOpenOnes) {
  namespace fs = std::filesystem;
  // The files a renewal replaces (kubelet swapping a mounted Secret, the webhook's rotator).
  const std::string cert = dir_.path() + "/tls.crt", key = dir_.path() + "/tls.key";
  fs::copy_file(certs_.server_cert_file, cert);
  fs::copy_file(certs_.server_key_file, key);
  ServerOptions options;
  options.tls = TlsOptions{cert, key, ""};
  server_ = std::make_unique<HttpServer>(options);
  server_->Handle("GET", "/secure", SyncHandler([this](const Request&) {
                    ++calls_;
                    return Response{200, "text/plain", {}, "secret"};
                  }));
  ASSERT_TRUE(server_->Start().ok());
  TlsConnection open;
  ASSERT_TRUE(open.Open(server_->port(), certs_.ca_cert_file));
  EXPECT_EQ(open.Get("/secure"), 200);

  TempDir next_dir;
  auto next = GenerateTestCerts(next_dir.path());  // another CA
  ASSERT_TRUE(next.ok()) << next.status();
  // Half renewed (the new certificate, the old key): refused, and the old pair keeps serving.
  fs::copy_file(next->server_cert_file, cert, fs::copy_options::overwrite_existing);
  EXPECT_EQ(server_->ReloadTls().code(), StatusCode::kInvalidArgument);
  TlsConnection before;
  EXPECT_TRUE(before.Open(server_->port(), certs_.ca_cert_file)) << "the old pair still serves";
  EXPECT_EQ(before.Get("/secure"), 200);

  fs::copy_file(next->server_key_file, key, fs::copy_options::overwrite_existing);
  ASSERT_TRUE(server_->ReloadTls().ok());
  TlsConnection renewed;
  ASSERT_TRUE(renewed.Open(server_->port(), next->ca_cert_file));
  EXPECT_EQ(renewed.Get("/secure"), 200);
  TlsConnection stale;
  EXPECT_FALSE(stale.Open(server_->port(), certs_.ca_cert_file)) << "the old certificate is still served";
  // The connections opened before the reload go on with the context they started with.
  EXPECT_EQ(open.Get("/secure"), 200);
  EXPECT_EQ(before.Get("/secure"), 200);
  EXPECT_EQ(calls_.load(), 5);
}

TEST_F(TlsTest, ReloadNeedsARunningTlsServer) {
  HttpServer plain(ServerOptions{});
  ASSERT_TRUE(plain.Start().ok());
  EXPECT_EQ(plain.ReloadTls().code(), StatusCode::kFailedPrecondition);
  ServerOptions options;
  options.tls = TlsOptions{certs_.server_cert_file, certs_.server_key_file, ""};
  HttpServer not_started(options);
  EXPECT_EQ(not_started.ReloadTls().code(), StatusCode::kFailedPrecondition);
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
