// The NVLink/PCIe relation of every GPU pair.
//
// NVLink: for each GPU, every active link's far end is read with
// nvmlDeviceGetNvLinkRemotePciInfo (and, where the driver has it,
// nvmlDeviceGetNvLinkRemoteDeviceType). A far end that is another GPU of this machine is
// a direct link (NVLink bridges, DGX-1 style hybrid cube mesh). A far end that is an
// NVSwitch is a link into the switch fabric: NVML reports the switch's PCI address, not
// the GPU behind it, so "which GPU can I reach" must be derived.
//
// Derivation: two GPUs attached to the same NVSwitch reach each other through it at the
// rate of the narrower attachment, so
//   nvlinks(a, b) = direct(a -> b) + sum over switches S reached by both of
//                   min(links(a -> S), links(b -> S)).
// On HGX/DGX boards every GPU is wired to every switch (H100: 4 switches with 5+4+4+5
// links per GPU; A100: 6 switches x 2), which yields the all-to-all NV18 / NV12 that
// `nvidia-smi topo -m` shows. Systems whose GPUs sit on disjoint switch sets get 0 for
// pairs without a common switch, which is the truth.
// When the driver lacks the remote-device-type query, a far end that is not one of this
// machine's GPUs is taken to be an NVSwitch: on x86 the only other NVLink peer type
// (IBM NPU) does not exist.
//
// PCIe: nvmlDeviceGetTopologyCommonAncestor for every pair.
// Link queries a GPU does not support (no NVLink at all, link index beyond its count)
// simply end that GPU's scan.

#include <algorithm>
#include <map>
#include <vector>

#include "device-plugin/nvml/discovery_internal.h"

namespace phalanx::nvml::internal {
namespace {

struct GpuLinks {
  std::map<int, int> direct;            // position of peer GPU -> links
  std::map<PciAddress, int> switches;   // NVSwitch address -> links
};

PcieLevel ToPcieLevel(nvmlGpuTopologyLevel_t level) {
  switch (level) {
    case NVML_TOPOLOGY_INTERNAL: return PcieLevel::kInternal;
    case NVML_TOPOLOGY_SINGLE: return PcieLevel::kSingle;
    case NVML_TOPOLOGY_MULTIPLE: return PcieLevel::kMultiple;
    case NVML_TOPOLOGY_HOSTBRIDGE: return PcieLevel::kHostBridge;
    case NVML_TOPOLOGY_NODE: return PcieLevel::kNode;
    case NVML_TOPOLOGY_SYSTEM: return PcieLevel::kSystem;
  }
  return PcieLevel::kUnknown;
}

GpuLinks ScanLinks(NvmlApi& api, nvmlDevice_t handle, int self,
                   const std::map<PciAddress, int>& gpu_at, GpuInfo& gpu) {
  GpuLinks out;
  for (unsigned int link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
    nvmlEnableState_t active = NVML_FEATURE_DISABLED;
    const nvmlReturn_t r = api.DeviceGetNvLinkState(handle, link, &active);
    // NOT_SUPPORTED / INVALID_ARGUMENT / FUNCTION_NOT_FOUND: no NVLink, or no more links.
    // Anything else (GPU lost mid-scan) also ends the scan: links are advisory.
    if (r != NVML_SUCCESS) break;
    if (active != NVML_FEATURE_ENABLED) continue;

    if (gpu.nvlink_version == 0) {
      unsigned int version = 0;
      if (api.DeviceGetNvLinkVersion(handle, link, &version) == NVML_SUCCESS) {
        gpu.nvlink_version = version;
      }
    }
    nvmlPciInfo_t remote{};
    if (api.DeviceGetNvLinkRemotePciInfo(handle, link, &remote) != NVML_SUCCESS) continue;
    const PciAddress address = ToPciAddress(remote);
    auto peer = gpu_at.find(address);

    nvmlIntNvLinkDeviceType_t type = NVML_NVLINK_DEVICE_TYPE_UNKNOWN;
    const bool typed = api.DeviceGetNvLinkRemoteDeviceType(handle, link, &type) == NVML_SUCCESS;
    const bool is_gpu = typed ? type == NVML_NVLINK_DEVICE_TYPE_GPU : peer != gpu_at.end();
    const bool is_switch = typed ? type == NVML_NVLINK_DEVICE_TYPE_SWITCH : peer == gpu_at.end();

    if (is_gpu && peer != gpu_at.end() && peer->second != self) {
      ++out.direct[peer->second];
    } else if (is_switch) {
      ++out.switches[address];
    }
  }
  return out;
}

}  // namespace

std::vector<std::vector<GpuLink>> DiscoverLinks(NvmlApi& api,
                                                const std::vector<nvmlDevice_t>& handles,
                                                std::vector<GpuInfo>& gpus) {
  const int n = static_cast<int>(gpus.size());
  std::vector<std::vector<GpuLink>> links(n, std::vector<GpuLink>(n));

  std::map<PciAddress, int> gpu_at;
  for (int i = 0; i < n; ++i) {
    if (handles[i] == nullptr) continue;
    nvmlPciInfo_t pci{};
    if (api.DeviceGetPciInfo(handles[i], &pci) == NVML_SUCCESS) gpu_at[ToPciAddress(pci)] = i;
  }

  std::vector<GpuLinks> scanned(n);
  for (int i = 0; i < n; ++i) {
    if (handles[i] != nullptr) scanned[i] = ScanLinks(api, handles[i], i, gpu_at, gpus[i]);
  }

  for (int i = 0; i < n; ++i) {
    if (handles[i] == nullptr) continue;
    links[i][i].pcie = PcieLevel::kInternal;
    for (int j = i + 1; j < n; ++j) {
      if (handles[j] == nullptr) continue;
      GpuLink link;
      auto direct = scanned[i].direct.find(j);
      if (direct != scanned[i].direct.end()) link.nvlinks += direct->second;
      for (const auto& [address, count] : scanned[i].switches) {
        auto other = scanned[j].switches.find(address);
        if (other == scanned[j].switches.end()) continue;
        link.nvlinks += std::min(count, other->second);
        link.via_nvswitch = true;
      }
      nvmlGpuTopologyLevel_t level = NVML_TOPOLOGY_SYSTEM;
      if (api.DeviceGetTopologyCommonAncestor(handles[i], handles[j], &level) == NVML_SUCCESS) {
        link.pcie = ToPcieLevel(level);
      }
      links[i][j] = link;
      links[j][i] = link;
    }
  }
  return links;
}

}  // namespace phalanx::nvml::internal
