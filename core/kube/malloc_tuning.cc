#include "core/kube/malloc_tuning.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace phalanx::kube {

bool TuneMallocForLargeResponses(size_t mmap_threshold_bytes) {
#if defined(__GLIBC__)
  return mallopt(M_MMAP_THRESHOLD, static_cast<int>(mmap_threshold_bytes)) == 1;
#else
  (void)mmap_threshold_bytes;
  return false;
#endif
}

}  // namespace phalanx::kube
