// kube-scheduler's ExtenderPreemptionArgs (POST /preempt body): extender/verbs/wire.h.
#include "extender/verbs/wire.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)phalanx::extender::ParsePreemptArgs(phalanx::fuzz::AsText(data, size));
  return 0;
}
