// kube-scheduler's ExtenderBindingArgs (POST /bind body): extender/verbs/wire.h.
#include "extender/verbs/wire.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto args = phalanx::extender::ParseBindArgs(phalanx::fuzz::AsText(data, size));
  (void)args;
  return 0;
}
