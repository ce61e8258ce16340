// A openb trace file for `phalanx simulate` (sim/trace/readers.h ReadOpenbPods); fuzz/trace_fuzz.h.
#include "fuzz/trace_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return phalanx::fuzz::FuzzTraceReader(&phalanx::sim::ReadOpenbPods, data, size);
}
