// NodeTopology: the GPUs of one node, their MIG devices and the pairwise link matrix —
// the model behind the `phalanx.io/gpu-topology` node annotation (written by the device
// plugin, read by the extender and the simulator; docs/contracts/gpu-topology.md).
//
// Invariants of a valid topology (checked by ValidateTopology, enforced by the codec):
// 1..kMaxGpus GPUs stored in index order; links.size() == gpus.size(); unique GPU and MIG
// UUIDs; at most kMaxMigDevicesPerGpu MIG devices per GPU, only on MIG-enabled GPUs,
// never overlapping. Pure logic: no I/O. Value type; thread-compatible.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/topology/gpu.h"
#include "core/topology/link_matrix.h"

namespace phalanx::topology {

inline constexpr int kMaxGpus = 64;
inline constexpr int kMaxMigDevicesPerGpu = 7;
// Memory slices of a MIG-capable GPU (A100, H100); bounds MIG placements.
inline constexpr int kMigMemorySlices = 8;

struct NodeTopology {
  std::vector<Gpu> gpus;
  LinkMatrix links;
  // Multi-node NVLink domain (NVL72-style clique) this node belongs to; empty if none.
  // Published as the `phalanx.io/nvlink-domain` label value, so it has a label's syntax.
  std::string nvlink_domain;
  std::string driver_version;  // "550.54.15"; empty if unknown
  std::string cuda_version;    // "12.4"; empty if unknown

  int gpu_count() const { return static_cast<int>(gpus.size()); }

  // Nominal bandwidth between GPUs i and j, GB/s per direction (0 <= i, j < gpu_count(),
  // asserted; 0 when out of range in release builds):
  //   NVLink: links × min(per-link rate of i, of j) (kDefaultNvlinkGbpsPerLink when a
  //           GPU does not state its rate), e.g. H100 NV18 = 18 × 25 = 450;
  //   PCIe:   PcieBandwidth(level): PIX 25, PXB 22, PHB 20, NODE 16, SYS 10;
  //   i == j: +infinity (no link to cross), so min() over a ring ignores it.
  // The all-reduce bottleneck of a ring is the min of Bandwidth over its edges.
  double Bandwidth(int i, int j) const;

  // See LinkMatrix::IsNvlinkAllToAll: true on NVSwitch nodes.
  bool IsNvlinkAllToAll() const { return links.IsNvlinkAllToAll(); }

  // Total MIG devices over all GPUs.
  size_t MigDeviceCount() const;

  friend bool operator==(const NodeTopology&, const NodeTopology&) = default;
};

}  // namespace phalanx::topology
