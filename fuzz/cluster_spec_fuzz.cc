// The simulator's cluster file (sim/cluster/cluster_spec.h, `phalanx simulate --cluster`).
#include <string>

#include "fuzz/fuzz_util.h"
#include "sim/cluster/cluster_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)phalanx::sim::ParseClusterSpec(std::string(phalanx::fuzz::AsText(data, size)), "fuzz");
  return 0;
}
