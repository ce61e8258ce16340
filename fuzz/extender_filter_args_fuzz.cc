// kube-scheduler's ExtenderArgs (POST /filter and /prioritize bodies): extender/verbs/wire.h.
#include "extender/verbs/wire.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static phalanx::json::FastJsonParser parser;  // one per thread, reused, as the server does
  (void)phalanx::extender::ParseFilterArgs(phalanx::fuzz::AsText(data, size), parser);
  return 0;
}
