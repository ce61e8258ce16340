// The TrainingJob annotation phalanx.io/preempt-request the extender writes and the operator
// reads (operator/lifecycle/preempt_request.h). Contract: what it accepts has the required fields.
#include "fuzz/fuzz_util.h"
#include "operator/lifecycle/preempt_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto request = phalanx::op::ParsePreemptRequest(phalanx::fuzz::AsText(data, size));
  if (request.ok()) {
    FUZZ_CHECK(!request->request_id.empty(), "accepted without requestId");
    (void)phalanx::op::EncodePreemptNotice(request->request_id, request->deadline);
  }
  return 0;
}
