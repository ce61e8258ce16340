#include "core/topology/reference_machines.h"

#include <fmt/format.h>

#include <cassert>

#include "core/topology/mig_layout.h"
#include "core/topology/synthetic_uuid.h"

namespace phalanx::topology {
namespace {

// GPUs with their identities and NUMA affinity; links all SYS until the caller sets them.
NodeTopology MakeGpus(int count, std::string_view product, uint64_t memory_mib,
                      const MachineOptions& options) {
  assert(count >= 1 && count <= kMaxGpus);
  assert(options.pci_bus_ids.empty() || options.pci_bus_ids.size() == static_cast<size_t>(count));
  NodeTopology t;
  t.gpus.resize(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    Gpu& gpu = t.gpus[static_cast<size_t>(i)];
    gpu.index = i;
    gpu.uuid = GpuUuid(SyntheticUuid("GPU-", options.uuid_seed, static_cast<uint64_t>(i)));
    gpu.product = std::string(product);
    gpu.memory_mib = memory_mib;
    if (options.numa_nodes > 0) gpu.numa_node = i * options.numa_nodes / count;
    // 3 buses apart keeps 64 GPUs below bus 0xff, like slots spread over a board.
    gpu.pci_bus_id = options.pci_bus_ids.empty() ? fmt::format("00000000:{:02X}:00.0", 0x10 + 3 * i)
                                                 : options.pci_bus_ids[static_cast<size_t>(i)];
  }
  t.links = LinkMatrix(count);
  t.driver_version = options.driver_version;
  t.cuda_version = options.cuda_version;
  t.nvlink_domain = options.nvlink_domain;
  return t;
}

bool SameNuma(const NodeTopology& t, int i, int j) {
  return t.gpus[static_cast<size_t>(i)].numa_node == t.gpus[static_cast<size_t>(j)].numa_node;
}

}  // namespace

NodeTopology MakeNvSwitchNode(int count, std::string_view product, uint64_t memory_mib, int nvlinks,
                              const MachineOptions& options) {
  NodeTopology t = MakeGpus(count, product, memory_mib, options);
  for (Gpu& gpu : t.gpus) gpu.nvlink_gbps_per_link = options.nvlink_gbps_per_link;
  for (int i = 0; i < count; ++i) {
    for (int j = i + 1; j < count; ++j) t.links.Set(i, j, Link::Nvlink(nvlinks));
  }
  return t;
}

NodeTopology MakeNvlinkPairsNode(int count, std::string_view product, uint64_t memory_mib,
                                 int nvlinks_per_pair, const MachineOptions& options) {
  NodeTopology t = MakeGpus(count, product, memory_mib, options);
  for (int i = 0; i < count; ++i) {
    // An odd last GPU has no bridge partner and so no NVLink rate to publish.
    bool paired = (i ^ 1) < count;
    if (paired) t.gpus[static_cast<size_t>(i)].nvlink_gbps_per_link = options.nvlink_gbps_per_link;
    for (int j = i + 1; j < count; ++j) {
      if (j == (i ^ 1)) {
        t.links.Set(i, j, Link::Nvlink(nvlinks_per_pair));
      } else {
        t.links.Set(i, j, Link::Pcie(SameNuma(t, i, j) ? LinkKind::kPhb : LinkKind::kSys));
      }
    }
  }
  return t;
}

NodeTopology MakePcieNode(int count, std::string_view product, uint64_t memory_mib, LinkKind same_numa_level,
                          const MachineOptions& options) {
  NodeTopology t = MakeGpus(count, product, memory_mib, options);
  for (int i = 0; i < count; ++i) {
    for (int j = i + 1; j < count; ++j) {
      t.links.Set(i, j, Link::Pcie(SameNuma(t, i, j) ? same_numa_level : LinkKind::kSys));
    }
  }
  return t;
}

NodeTopology MakeDgxH100Node() {
  MachineOptions options;
  options.uuid_seed = "dgx-h100";
  options.pci_bus_ids = {"00000000:18:00.0", "00000000:2A:00.0", "00000000:3A:00.0", "00000000:5D:00.0",
                         "00000000:9A:00.0", "00000000:AB:00.0", "00000000:BA:00.0", "00000000:DB:00.0"};
  options.driver_version = "550.54.15";
  options.cuda_version = "12.4";
  return MakeNvSwitchNode(8, "NVIDIA H100 80GB HBM3", 81559, 18, options);
}

NodeTopology MakeA100MigNode() {
  MachineOptions options;
  options.uuid_seed = "a100-mig";
  options.pci_bus_ids = {"00000000:07:00.0", "00000000:0F:00.0", "00000000:47:00.0", "00000000:4E:00.0",
                         "00000000:87:00.0", "00000000:90:00.0", "00000000:B7:00.0", "00000000:BD:00.0"};
  options.driver_version = "535.161.08";
  options.cuda_version = "12.2";
  NodeTopology t = MakeNvSwitchNode(8, "NVIDIA A100-SXM4-80GB", 81920, 12, options);
  // Both layouts are valid by construction; a failure here is a bug in the profile table.
  Status s0 = ApplyMigLayout(t.gpus[0], std::vector<std::string>(7, "1g.10gb"));
  Status s1 = ApplyMigLayout(t.gpus[1], {"3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"});
  assert(s0.ok() && s1.ok());
  (void)s0;
  (void)s1;
  return t;
}

NodeTopology MakePcie4GpuNode() {
  MachineOptions options;
  options.uuid_seed = "pcie-4gpu";
  // RTX A6000 NVLink bridge: 4 links, 112.5 GB/s both directions = 56.25 GB/s per direction.
  options.nvlink_gbps_per_link = 14.0625;
  options.pci_bus_ids = {"00000000:17:00.0", "00000000:31:00.0", "00000000:B1:00.0", "00000000:CA:00.0"};
  options.driver_version = "550.54.15";
  options.cuda_version = "12.4";
  return MakeNvlinkPairsNode(4, "NVIDIA RTX A6000", 49140, 4, options);
}

}  // namespace phalanx::topology
