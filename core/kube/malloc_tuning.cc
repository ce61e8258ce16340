#include "core/kube/malloc_tuning.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace phalanx::kube {

bool TuneMallocForLargeResponses(size_t mmap_threshold_bytes, size_t trim_threshold_bytes) {
#if defined(__GLIBC__)
  const bool mmap_set = mallopt(M_MMAP_THRESHOLD, static_cast<int>(mmap_threshold_bytes)) == 1;
  const bool trim_set = mallopt(M_TRIM_THRESHOLD, static_cast<int>(trim_threshold_bytes)) == 1;
  return mmap_set && trim_set;
#else
  (void)mmap_threshold_bytes;
  (void)trim_threshold_bytes;
  return false;
#endif
}

}  // namespace phalanx::kube
