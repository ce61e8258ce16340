// Process-wide allocator tuning for daemons that sync big informers.
//
// Each list page is a multi-megabyte body (500 pods ~ 2.5 MB) allocated and freed per page.
// glibc raises its mmap threshold after such frees, so later pages land on the heap and leave it
// fragmented: the 5,000-node + 100,000-pod sync measured 255 MB RSS untuned vs ~120 MB with a
// fixed 1 MiB threshold (bench/RESULTS.md, core/kube). Call once at the start of main().
#pragma once

#include <cstddef>

namespace phalanx::kube {

// Fixes glibc's mmap threshold (allocations >= it are mmapped and returned to the OS on free).
// Returns false when the allocator refused (non-glibc builds: no-op, false).
bool TuneMallocForLargeResponses(size_t mmap_threshold_bytes = 1u << 20);

}  // namespace phalanx::kube
