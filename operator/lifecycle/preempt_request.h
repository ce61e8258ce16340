// The extender's graceful-preemption request, annotation phalanx.io/preempt-request on a
// TrainingJob (docs/architecture.md §2.2): {"requestId":"…","deadline":"RFC3339","reason":"…","preemptor":"ns/pod"}.
#pragma once

#include <string>
#include <string_view>

#include "core/base/clock.h"
#include "core/base/result.h"

namespace phalanx::op {

struct PreemptRequest {
  std::string request_id;
  SystemTime deadline{};
  std::string reason;
  std::string preemptor;
};

// kInvalidArgument naming the bad field; requestId and deadline are required.
Result<PreemptRequest> ParsePreemptRequest(std::string_view text);
// The pod annotation phalanx.io/preempt-notice the workers read through the downward API:
// {"requestId":"…","deadline":"…"}.
std::string EncodePreemptNotice(const std::string& request_id, SystemTime deadline);

}  // namespace phalanx::op
