// Process-wide allocator tuning for daemons that sync big informers.
//
// Each list page is a multi-megabyte body (500 pods ~ 2.5 MB) allocated and freed per page.
// glibc raises its mmap threshold after such frees, so later pages land on the heap and leave it
// fragmented: the 5,000-node + 100,000-pod sync measured 255 MB RSS untuned vs ~120 MB with a
// fixed 1 MiB threshold (bench/RESULTS.md, core/kube). Call once at the start of main().
//
// Fixing the mmap threshold also freezes glibc's trim threshold at its 128 KiB default (glibc
// raises both together), so a request that frees more than that at the top of a heap gives the
// pages back and faults them in again on the next one: the extender's 5,000-name filter frees
// ~0.3-1 MB per request, and those faults were a third of its CPU (bench/RESULTS.md, Extender).
// The trim threshold is therefore fixed too, well above one request's working memory.
#pragma once

#include <cstddef>

namespace phalanx::kube {

// Fixes glibc's mmap threshold (allocations >= it are mmapped and returned to the OS on free)
// and its trim threshold (free memory kept at the top of a heap before it is returned).
// Returns false when the allocator refused (non-glibc builds: no-op, false).
bool TuneMallocForLargeResponses(size_t mmap_threshold_bytes = 1u << 20, size_t trim_threshold_bytes = 32u << 20);

}  // namespace phalanx::kube
