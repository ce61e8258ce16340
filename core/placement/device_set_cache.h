// Memoised ChooseDeviceSet for the planners (internal to core/placement).
//
// Thousands of nodes share a handful of machine shapes and most of them are either
// empty or in one of a few fill states, so (topology, available mask, count) repeats
// constantly; the exhaustive device-set search costs tens of microseconds, a lookup
// well under one. The memo is thread_local (no locking; each thread warms its own) and
// bounded: it is cleared when it reaches kMaxEntries. Each entry keeps a shared_ptr to
// its matrix, so a matrix's address can never be reused by a different matrix while
// an entry refers to it (which would return a stale answer).
//
// Unknown topology (null matrix): the lowest `count` available GPUs, ring bandwidth 0.
#pragma once

#include <memory>
#include <optional>

#include "core/placement/device_set.h"

namespace phalanx::placement {

struct CachedDeviceSet {
  GpuMask gpus = 0;
  double ring_bandwidth_gbps = 0;  // +inf for one GPU; 0 for unknown topology
};

// Nullopt when fewer than `count` GPUs are available (or count < 1).
std::optional<CachedDeviceSet> ChooseDeviceSetCached(const std::shared_ptr<const BandwidthMatrix>& bandwidth,
                                                     GpuMask available, int count);

// Ring bandwidth of the best `count` GPUs among `healthy` (what the node offers when
// empty): the denominator of the topology score. 0 for unknown topology.
double BestRingCached(const std::shared_ptr<const BandwidthMatrix>& bandwidth, GpuMask healthy, int count);

// Topology quality of a choice in [0, 1]: ring / best ring; 1 for one GPU or unknown
// topology.
double TopologyRatio(const std::shared_ptr<const BandwidthMatrix>& bandwidth, GpuMask healthy, int count,
                     double ring_bandwidth_gbps);

void ClearDeviceSetCacheForTest();

}  // namespace phalanx::placement
