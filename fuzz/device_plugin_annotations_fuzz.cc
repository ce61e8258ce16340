// What the device plugin reads back from the API server (device-plugin/publish/publisher.h): the
// extender's device plan annotation and a pod's phalanx.io/devices.
#include <string>

#include "device-plugin/publish/publisher.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(phalanx::fuzz::AsText(data, size));
  (void)phalanx::device_plugin::ParseDevicePlan(text);
  (void)phalanx::device_plugin::ParseDevicesAnnotation(text);
  return 0;
}
