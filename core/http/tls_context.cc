// Server TLS context from PEM files (see tls_context.h).
#include "core/http/tls_context.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <string>

namespace phalanx::http::internal {
namespace {

namespace ssl = boost::asio::ssl;

Status TlsFileError(std::string_view what, const std::string& file,
                    const boost::system::error_code& ec) {
  return InvalidArgumentError("TLS " + std::string(what) + " " + file + ": " + ec.message());
}

}  // namespace

Result<std::unique_ptr<ssl::context>> MakeServerTlsContext(const TlsOptions& tls) {
  if (tls.cert_file.empty() || tls.key_file.empty()) {
    return InvalidArgumentError("TLS needs both a certificate file and a key file");
  }
  auto context = std::make_unique<ssl::context>(ssl::context::tls_server);
  boost::system::error_code ec;
  context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                           ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                           ssl::context::no_tlsv1_1 | ssl::context::single_dh_use,
                       ec);
  if (ec) return InternalError("TLS options: " + ec.message());
  context->use_certificate_chain_file(tls.cert_file, ec);
  if (ec) return TlsFileError("certificate", tls.cert_file, ec);
  context->use_private_key_file(tls.key_file, ssl::context::pem, ec);
  if (ec) return TlsFileError("private key", tls.key_file, ec);
  if (SSL_CTX_check_private_key(context->native_handle()) != 1) {
    ERR_clear_error();
    return InvalidArgumentError("TLS private key " + tls.key_file +
                                " does not match certificate " + tls.cert_file);
  }
  if (!tls.client_ca_file.empty()) {
    context->load_verify_file(tls.client_ca_file, ec);
    if (ec) return TlsFileError("client CA", tls.client_ca_file, ec);
    context->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert, ec);
    if (ec) return InternalError("TLS verify mode: " + ec.message());
    // Advertise the accepted CA so clients holding several certificates pick the right one.
    if (STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(tls.client_ca_file.c_str())) {
      SSL_CTX_set_client_CA_list(context->native_handle(), names);
    }
    ERR_clear_error();
  }
  return context;
}

}  // namespace phalanx::http::internal
