// One line of a Kubernetes watch stream (core/kube/watch.h ParseWatchEvent). Contract: an event
// it accepts carries an object that parses.
#include "core/kube/watch.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto event = phalanx::kube::ParseWatchEvent(phalanx::fuzz::AsText(data, size));
  if (event.ok()) (void)event->Object();
  return 0;
}
