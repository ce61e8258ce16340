// Bridges the topology model (what a node has) to placement (what a request can get):
// the pairwise bandwidth matrix and the GPUs usable for whole-GPU requests.
// Pure; thread-safe.
#pragma once

#include <vector>

#include "core/placement/device_set.h"
#include "core/placement/mig.h"
#include "core/topology/node_topology.h"

namespace phalanx::placement {

// GB/s per direction for every GPU pair, from NodeTopology::Bandwidth (NVLink count x
// per-link rate, or the nominal PCIe figure of the pair's level).
BandwidthMatrix BandwidthFromTopology(const topology::NodeTopology& node);

// Healthy GPUs that are not partitioned into MIG slices: the ones a whole-GPU request
// (nvidia.com/gpu with MIG strategy none/mixed) can be given.
GpuMask WholeGpuMask(const topology::NodeTopology& node);

// GPUs in MIG mode (NodeSpec::mig).
GpuMask MigGpuMask(const topology::NodeTopology& node);

// The node's MIG devices as schedulable capacity, GPU by GPU in device order; a device
// is unhealthy when its parent GPU is. Device IDs are the MIG UUIDs.
std::vector<MigSlice> MigSlicesFromTopology(const topology::NodeTopology& node);

}  // namespace phalanx::placement
