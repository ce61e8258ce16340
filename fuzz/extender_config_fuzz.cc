// The extender's config file (extender/config.h, the chart's extender.config).
#include "extender/config.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)phalanx::extender::ParseConfig(phalanx::fuzz::AsText(data, size));
  return 0;
}
