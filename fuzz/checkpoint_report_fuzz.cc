// The checkpoint record workers write to their termination log or the progress endpoint
// (operator/lifecycle/checkpoint.h).
#include "fuzz/fuzz_util.h"
#include "operator/lifecycle/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)phalanx::op::ParseCheckpointReport(phalanx::fuzz::AsText(data, size));
  return 0;
}
