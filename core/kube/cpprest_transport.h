// Transport over cpprestsdk's http_client (Boost.Asio backend): http and https, CA and client
// certificates from memory (kubeconfig *-data), insecure-skip-tls-verify, keep-alive pooling.
// cpprest headers stay inside the .cc (its U() macro breaks other headers).
#pragma once

#include <chrono>
#include <memory>

#include "core/base/result.h"
#include "core/kube/config.h"
#include "core/kube/transport.h"

namespace phalanx::kube {

struct CpprestTransportOptions {
  std::chrono::milliseconds default_timeout{30'000};
};

// Fails (InvalidArgument) on an unparsable server URL or unusable PEM material.
Result<std::unique_ptr<Transport>> MakeCpprestTransport(const KubeConfig& config,
                                                        CpprestTransportOptions options = {});

}  // namespace phalanx::kube
