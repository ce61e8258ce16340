// Builds the server's TLS context from PEM files (TlsOptions). TLS 1.2+ only; with a client CA,
// clients must present a certificate that chains to it (mutual TLS). Thread-safe (no state).
#pragma once

#include <memory>

#include <boost/asio/ssl/context.hpp>

#include "core/base/result.h"
#include "core/http/http_server.h"

namespace phalanx::http::internal {

// InvalidArgument naming the file and OpenSSL's reason when a file is missing or unusable, or
// the key does not match the certificate.
Result<std::unique_ptr<boost::asio::ssl::context>> MakeServerTlsContext(const TlsOptions& tls);

}  // namespace phalanx::http::internal
