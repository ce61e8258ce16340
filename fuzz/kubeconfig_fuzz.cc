// A kubeconfig (core/kube/config.h). Relative paths inside it resolve against a directory that
// does not exist, so the target reads no files of the machine it runs on.
#include "core/kube/config.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)phalanx::kube::ParseKubeconfig(phalanx::fuzz::AsText(data, size), "fuzz", "/nonexistent-phalanx-fuzz");
  return 0;
}
