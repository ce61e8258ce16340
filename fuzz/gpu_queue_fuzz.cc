// A GpuQueue custom resource and a Namespace as the extender's watches deliver them
// (extender/queues/queue_sync.h).
#include "core/json/json.h"
#include "extender/queues/queue_sync.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto object = phalanx::json::Parse(phalanx::fuzz::AsText(data, size));
  if (!object.ok()) return 0;
  (void)phalanx::extender::DecodeGpuQueue(*object);
  (void)phalanx::extender::DecodeNamespace(*object);
  return 0;
}
