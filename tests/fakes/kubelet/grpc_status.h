// grpc::Status <-> phalanx::Status for the fake kubelet. The code numbers are the same
// canonical set (core/base/status.h), so the mapping is 1:1.
#pragma once

#include <grpcpp/support/status.h>

#include "core/base/status.h"

namespace phalanx::fake_kubelet {

inline Status FromGrpc(const grpc::Status& s) {
  if (s.ok()) return OkStatus();
  return Status(static_cast<StatusCode>(s.error_code()), s.error_message());
}

}  // namespace phalanx::fake_kubelet
