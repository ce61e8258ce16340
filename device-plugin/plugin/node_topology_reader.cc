#include "device-plugin/plugin/node_topology_reader.h"

#include <fmt/format.h>

#include "core/topology/topology_validation.h"
#include "device-plugin/nvml/dl_nvml.h"
#include "device-plugin/nvml/gpu_discovery.h"
#include "device-plugin/nvml/nvml_session.h"

namespace phalanx::device_plugin {
namespace {

topology::Link LinkFor(const nvml::GpuLink& l) {
  if (l.nvlinks > 0) return topology::Link::Nvlink(std::min(l.nvlinks, topology::kMaxNvlinksPerPair));
  using K = topology::LinkKind;
  switch (l.pcie) {
    case nvml::PcieLevel::kSingle: return topology::Link::Pcie(K::kPix);
    case nvml::PcieLevel::kMultiple: return topology::Link::Pcie(K::kPxb);
    case nvml::PcieLevel::kHostBridge: return topology::Link::Pcie(K::kPhb);
    case nvml::PcieLevel::kNode: return topology::Link::Pcie(K::kNode);
    default: return topology::Link::Pcie(K::kSys);
  }
}

}  // namespace

double NvlinkRateFor(unsigned int v, std::string_view product) {
  if (v == 0) return 0;
  if (product.find("RTX") != std::string_view::npos) return 14.0625;
  if (v == 1) return 20.0;   // NVLink 1.0 (P100)
  if (v >= 7) return 50.0;   // NVLink 5.0 (B200)
  return 25.0;               // NVLink 2.0 .. 4.0
}

Result<topology::NodeTopology> TopologyFromInventory(const nvml::GpuInventory& inv) {
  topology::NodeTopology t;
  t.driver_version = inv.driver_version;
  if (inv.cuda_driver_version > 0) {
    t.cuda_version = fmt::format("{}.{}", inv.cuda_driver_version / 1000,
                                 (inv.cuda_driver_version % 1000) / 10);
  }
  const int n = static_cast<int>(inv.gpus.size());
  for (int i = 0; i < n; ++i) {
    const auto& g = inv.gpus[i];
    if (g.uuid.empty()) {
      return InvalidArgumentError(fmt::format("GPU {}: no UUID ({})", g.index, g.status.ToString()));
    }
    topology::Gpu out;
    out.index = i;
    out.uuid = g.uuid;
    out.product = g.name.empty() ? "unknown" : g.name;
    out.memory_mib = g.memory_mib;
    out.numa_node = g.numa_node;
    out.pci_bus_id = g.pci_bus_id;
    if (!g.status.ok()) {
      out.health = topology::Health::kUnhealthy;
      out.health_reason = g.status.message().substr(0, 200);
    }
    out.mig_enabled = g.mig_enabled;
    for (const auto& m : g.mig_devices) {
      topology::MigDevice md;
      md.uuid = m.uuid;
      md.profile = m.profile;
      md.memory_mib = m.memory_mib;
      md.gpu_instance_id = static_cast<int>(m.gpu_instance_id);
      md.compute_instance_id = static_cast<int>(m.compute_instance_id);
      md.placement_start = static_cast<int>(m.placement_start);
      md.placement_size = static_cast<int>(m.placement_size);
      out.mig_devices.push_back(std::move(md));
    }
    out.nvlink_gbps_per_link = NvlinkRateFor(g.nvlink_version, out.product);
    t.gpus.push_back(std::move(out));
  }
  t.links = topology::LinkMatrix(n);
  for (int i = 0; i < n; ++i) {
    for (int j = i + 1; j < n; ++j) {
      if (i < static_cast<int>(inv.links.size()) && j < static_cast<int>(inv.links[i].size())) {
        auto link = LinkFor(inv.links[i][j]);
        t.links.Set(i, j, link);
        if (link.is_nvlink()) {
          for (int k : {i, j}) {
            if (t.gpus[k].nvlink_gbps_per_link <= 0) {
              t.gpus[k].nvlink_gbps_per_link = topology::kDefaultNvlinkGbpsPerLink;
            }
          }
        }
      }
    }
  }
  PHX_RETURN_IF_ERROR(topology::ValidateTopology(t));
  return t;
}

Result<topology::NodeTopology> ReadNodeTopology(std::string_view nvml_library_path) {
  auto lib = nvml::DlNvml::Load(nvml_library_path.empty() ? nvml::DlNvml::kDefaultLibrary
                                                          : nvml_library_path);
  if (!lib.ok()) return lib.status();
  auto session = nvml::NvmlSession::Open(**lib);
  if (!session.ok()) return session.status();
  auto inv = nvml::DiscoverGpus(**lib);
  if (!inv.ok()) return inv.status();
  return TopologyFromInventory(*inv);
}

}  // namespace phalanx::device_plugin
