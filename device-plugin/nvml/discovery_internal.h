// Pieces of DiscoverGpus shared between gpu_discovery.cc, mig_discovery.cc and
// link_discovery.cc. Internal to phalanx_nvml: not for use outside device-plugin/nvml.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/base/result.h"
#include "device-plugin/nvml/gpu_inventory.h"
#include "device-plugin/nvml/nvml_api.h"
#include "device-plugin/nvml/nvml_status.h"

namespace phalanx::nvml::internal {

// PCI address as three numbers, comparable; formatted for NVML ("00000000:18:00.0") or
// sysfs ("0000:18:00.0").
struct PciAddress {
  unsigned int domain = 0;
  unsigned int bus = 0;
  unsigned int device = 0;
  friend bool operator==(const PciAddress&, const PciAddress&) = default;
  friend auto operator<=>(const PciAddress&, const PciAddress&) = default;
};
PciAddress ToPciAddress(const nvmlPciInfo_t& pci);
std::string NvmlBusId(const PciAddress& address);
std::string SysfsBusId(const PciAddress& address);

// Calls a string query (uuid, name, driver version) with a buffer large enough for
// every NVML version and returns the text. `function` names the C function for errors.
template <typename Query>
Result<std::string> ReadString(NvmlApi& api, std::string_view function, std::string_view context,
                               Query&& query);

// Fills gpu.mig_devices for a GPU in MIG mode. `parent` is the GPU's handle.
Status ReadMigDevices(NvmlApi& api, nvmlDevice_t parent, GpuInfo& gpu);

// The pairwise relation matrix. handles[i] is gpus[i]'s handle, or nullptr when the GPU
// could not be read (its row/column stays kUnknown). Also sets gpus[i].nvlink_version.
std::vector<std::vector<GpuLink>> DiscoverLinks(NvmlApi& api,
                                                const std::vector<nvmlDevice_t>& handles,
                                                std::vector<GpuInfo>& gpus);

// ---- template definition ----
template <typename Query>
Result<std::string> ReadString(NvmlApi& api, std::string_view function, std::string_view context,
                               Query&& query) {
  // 96 bytes covers every NVML string buffer (UUID_V2, NAME_V2; driver version is 80).
  char buffer[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
  const nvmlReturn_t r = query(buffer, static_cast<unsigned int>(sizeof(buffer)));
  if (r != NVML_SUCCESS) return NvmlStatus(api, r, function, context);
  buffer[sizeof(buffer) - 1] = '\0';
  return std::string(buffer);
}

}  // namespace phalanx::nvml::internal
