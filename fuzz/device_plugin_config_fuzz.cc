// The device plugin's config file, NVIDIA format (`version: v1`): device-plugin/plugin/config.h.
#include "device-plugin/plugin/config.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)phalanx::device_plugin::ParseConfig(phalanx::fuzz::AsText(data, size));
  return 0;
}
