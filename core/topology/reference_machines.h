// Builders of node topologies for the simulator and tests, and the three reference
// machines checked in under tests/data/topology/ (the fake NVML describes the same
// machines, so device-plugin tests can compare what it publishes with these).
//
// Every builder returns a topology that passes ValidateTopology for 1 <= count <=
// kMaxGpus (asserted). GPU UUIDs are SyntheticUuid("GPU-", options.uuid_seed, index):
// give each simulated node its own seed so device IDs stay unique across a cluster.
// Pure; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/topology/link.h"
#include "core/topology/node_topology.h"

namespace phalanx::topology {

struct MachineOptions {
  // GPUs are split evenly over this many NUMA nodes in index order (8 GPUs, 2 nodes:
  // 0-3 on 0, 4-7 on 1). 0 = NUMA affinity unknown.
  int numa_nodes = 2;
  std::string uuid_seed = "phalanx";
  // Per-link NVLink rate for GPUs with NVLinks (ignored by MakePcieNode).
  double nvlink_gbps_per_link = kDefaultNvlinkGbpsPerLink;
  // One per GPU; empty = synthetic "00000000:<bus>:00.0" addresses.
  std::vector<std::string> pci_bus_ids;
  std::string driver_version;
  std::string cuda_version;
  std::string nvlink_domain;
};

// NVSwitch node: every pair of GPUs joined by NV<nvlinks> (H100 SXM: 18, A100 SXM: 12).
NodeTopology MakeNvSwitchNode(int count, std::string_view product, uint64_t memory_mib, int nvlinks,
                              const MachineOptions& options = {});

// NVLink-bridged pairs (0,1), (2,3), ... joined by NV<nvlinks_per_pair>; every other pair
// is PHB within a NUMA node and SYS across NUMA nodes.
NodeTopology MakeNvlinkPairsNode(int count, std::string_view product, uint64_t memory_mib,
                                 int nvlinks_per_pair, const MachineOptions& options = {});

// PCIe-only node: pairs within a NUMA node are `same_numa_level` (kPix..kNode), pairs
// across NUMA nodes are SYS. With unknown NUMA every pair is `same_numa_level`.
NodeTopology MakePcieNode(int count, std::string_view product, uint64_t memory_mib,
                          LinkKind same_numa_level = LinkKind::kPhb, const MachineOptions& options = {});

// tests/data/topology/dgx-h100.json: 8× "NVIDIA H100 80GB HBM3" (81559 MiB), NVSwitch
// NV18 (450 GB/s per pair), GPUs 0-3 on NUMA 0 and 4-7 on NUMA 1, DGX H100 bus ids.
NodeTopology MakeDgxH100Node();
// tests/data/topology/a100-mig.json: 8× "NVIDIA A100-SXM4-80GB" (81920 MiB), NVSwitch
// NV12; GPU 0 in MIG mode as 7× 1g.10gb, GPU 1 as 3g.40gb + 2g.20gb + 2× 1g.10gb.
NodeTopology MakeA100MigNode();
// tests/data/topology/pcie-4gpu.json: 4× "NVIDIA RTX A6000" (49140 MiB) with NVLink
// bridges NV4 (14.0625 GB/s per link) on 0-1 and 2-3, GPUs 0-1 on NUMA 0, 2-3 on NUMA 1,
// SYS across.
NodeTopology MakePcie4GpuNode();

}  // namespace phalanx::topology
