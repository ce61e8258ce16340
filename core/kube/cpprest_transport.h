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
  // Streamed responses (watches, docs/hardening.md "Watch event backlogs"). cpprest buffers a
  // response body in memory as fast as the socket delivers it, and a line is kept until its '\n'
  // arrives: without these a never-ending line or a reader far behind a busy watch grows without
  // bound. Over either, ReadLine fails with kResourceExhausted and the stream is cancelled (its
  // buffer freed); a watch then reconnects from its last resourceVersion.
  // One line (one watch event): etcd stores objects up to 1.5 MiB, their JSON is a few times that.
  size_t max_stream_line_bytes = 16u << 20;
  // Received but not yet read (cpprest's buffer plus an unfinished line), checked at each read.
  size_t max_stream_backlog_bytes = 64u << 20;
};

// Fails (InvalidArgument) on an unparsable server URL or unusable PEM material.
Result<std::unique_ptr<Transport>> MakeCpprestTransport(const KubeConfig& config,
                                                        CpprestTransportOptions options = {});

}  // namespace phalanx::kube
