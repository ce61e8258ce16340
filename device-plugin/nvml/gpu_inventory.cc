#include "device-plugin/nvml/gpu_inventory.h"

#include <fmt/format.h>

namespace phalanx::nvml {

std::string_view PcieLevelName(PcieLevel level) {
  switch (level) {
    case PcieLevel::kInternal: return "X";
    case PcieLevel::kSingle: return "PIX";
    case PcieLevel::kMultiple: return "PXB";
    case PcieLevel::kHostBridge: return "PHB";
    case PcieLevel::kNode: return "NODE";
    case PcieLevel::kSystem: return "SYS";
    case PcieLevel::kUnknown: break;
  }
  return "?";
}

std::string LinkLabel(const GpuLink& link) {
  if (link.pcie == PcieLevel::kInternal) return "X";
  if (link.nvlinks > 0) return fmt::format("NV{}", link.nvlinks);
  return std::string(PcieLevelName(link.pcie));
}

int GpuInventory::FindGpu(const GpuUuid& uuid) const {
  for (size_t i = 0; i < gpus.size(); ++i) {
    if (gpus[i].uuid == uuid) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace phalanx::nvml
