// A Pod as the API server returns it (extender/objects/k8s_objects.h ParsePod), and the pod annotation
// phalanx.io/devices on its own (ParseDeviceAssignment): the input is a Pod when it parses as JSON
// with an object at the top, else the annotation value. Contract for the annotation: what it
// accepts encodes and parses back to itself.
#include "core/json/json.h"
#include "extender/objects/k8s_objects.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace extender = phalanx::extender;
  const std::string_view text = phalanx::fuzz::AsText(data, size);
  if (auto pod = phalanx::json::Parse(text); pod.ok() && pod->is_object() && pod->contains("metadata")) {
    (void)extender::ParsePod(*pod);
    return 0;
  }
  auto devices = extender::ParseDeviceAssignment(text);
  if (!devices.ok()) return 0;
  const std::string encoded = extender::EncodeDeviceAssignment(*devices);
  auto again = extender::ParseDeviceAssignment(encoded);
  FUZZ_CHECK(again.ok(), again.status().message());
  FUZZ_CHECK(*again == *devices, encoded);
  return 0;
}
