// RenderMatrix: a human-readable view of a NodeTopology for `phalanx topology`, shaped
// like `nvidia-smi topo -m` (GPU rows and columns with link tokens and a NUMA affinity
// column, then a legend) and extended with the GPU list, the nominal bandwidth matrix
// placement uses, and the MIG devices. Plain text, no trailing spaces, ends with '\n'.
// The layout is for humans and may change; machines read the annotation instead.
// Pure; thread-safe.
#pragma once

#include <string>

#include "core/topology/node_topology.h"

namespace phalanx::topology {

std::string RenderMatrix(const NodeTopology& topology);

}  // namespace phalanx::topology
