#include "device-plugin/nvml/gpu_discovery.h"

#include <charconv>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "device-plugin/nvml/discovery_internal.h"
#include "device-plugin/nvml/nvml_status.h"

namespace phalanx::nvml {
namespace internal {

PciAddress ToPciAddress(const nvmlPciInfo_t& pci) {
  return PciAddress{pci.domain, pci.bus, pci.device};
}

std::string NvmlBusId(const PciAddress& a) {
  return fmt::format("{:08X}:{:02X}:{:02X}.0", a.domain, a.bus, a.device);
}

std::string SysfsBusId(const PciAddress& a) {
  return fmt::format("{:04x}:{:02x}:{:02x}.0", a.domain, a.bus, a.device);
}

}  // namespace internal

namespace {

using internal::PciAddress;
using internal::ReadString;

constexpr uint64_t kMiB = 1024 * 1024;

// "optional" queries: a driver without them, or a GPU that does not support them, is a
// reason to fall back, not an error.
bool IsAbsent(nvmlReturn_t r) {
  return r == NVML_ERROR_FUNCTION_NOT_FOUND || r == NVML_ERROR_NOT_SUPPORTED;
}

// sysfs numa_node: "-1" (no affinity) or a node number. Missing/unreadable -> nullopt.
std::optional<int> ReadSysfsNumaNode(const std::string& sysfs_root, const PciAddress& address) {
  std::ifstream in(sysfs_root + "/" + internal::SysfsBusId(address) + "/numa_node");
  std::string text;
  if (!in || !(in >> text)) return std::nullopt;
  int node = -1;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), node);
  if (ec != std::errc() || ptr != text.data() + text.size() || node < 0) return std::nullopt;
  return node;
}

// Reads one GPU; stops at the first failing required query and records it in `status`.
class GpuReader {
 public:
  GpuReader(NvmlApi& api, const DiscoveryOptions& options, unsigned int index)
      : api_(api), options_(options), context_(fmt::format("GPU {}", index)) {
    gpu_.index = index;
  }

  // Returns the GPU (possibly with a non-OK status) and its handle (nullptr if none).
  std::pair<GpuInfo, nvmlDevice_t> Read() {
    gpu_.status = ReadAll();
    return {std::move(gpu_), handle_};
  }

 private:
  Status ReadAll() {
    nvmlDevice_t handle = nullptr;
    PHX_RETURN_IF_ERROR(Check(api_.DeviceGetHandleByIndex(gpu_.index, &handle),
                              "nvmlDeviceGetHandleByIndex"));
    handle_ = handle;

    PHX_ASSIGN_OR_RETURN(std::string uuid,
                         ReadString(api_, "nvmlDeviceGetUUID", context_,
                                    [&](char* buf, unsigned int len) {
                                      return api_.DeviceGetUUID(handle_, buf, len);
                                    }));
    gpu_.uuid = GpuUuid(std::move(uuid));
    PHX_ASSIGN_OR_RETURN(gpu_.name, ReadString(api_, "nvmlDeviceGetName", context_,
                                               [&](char* buf, unsigned int len) {
                                                 return api_.DeviceGetName(handle_, buf, len);
                                               }));

    nvmlMemory_t memory{};
    PHX_RETURN_IF_ERROR(Check(api_.DeviceGetMemoryInfo(handle_, &memory), "nvmlDeviceGetMemoryInfo"));
    gpu_.memory_mib = memory.total / kMiB;

    nvmlPciInfo_t pci{};
    PHX_RETURN_IF_ERROR(Check(api_.DeviceGetPciInfo(handle_, &pci), "nvmlDeviceGetPciInfo"));
    const PciAddress address = internal::ToPciAddress(pci);
    gpu_.pci_bus_id = internal::NvmlBusId(address);

    PHX_RETURN_IF_ERROR(ReadNumaNode(address));
    return ReadMig();
  }

  Status ReadNumaNode(const PciAddress& address) {
    unsigned int node = 0;
    const nvmlReturn_t r = api_.DeviceGetNumaNodeId(handle_, &node);
    if (r == NVML_SUCCESS) {
      gpu_.numa_node = static_cast<int>(node);
      return OkStatus();
    }
    if (!IsAbsent(r)) return Check(r, "nvmlDeviceGetNumaNodeId");
    gpu_.numa_node = ReadSysfsNumaNode(options_.sysfs_pci_devices, address);
    return OkStatus();
  }

  Status ReadMig() {
    unsigned int current = 0;
    unsigned int pending = 0;
    const nvmlReturn_t r = api_.DeviceGetMigMode(handle_, &current, &pending);
    if (IsAbsent(r)) return OkStatus();  // not MIG capable
    PHX_RETURN_IF_ERROR(Check(r, "nvmlDeviceGetMigMode"));
    gpu_.mig_capable = true;
    gpu_.mig_enabled = current == NVML_DEVICE_MIG_ENABLE;
    gpu_.mig_pending = pending == NVML_DEVICE_MIG_ENABLE;
    if (!gpu_.mig_enabled) return OkStatus();
    return internal::ReadMigDevices(api_, handle_, gpu_);
  }

  Status Check(nvmlReturn_t r, std::string_view function) {
    return NvmlStatus(api_, r, function, context_);
  }

  NvmlApi& api_;
  const DiscoveryOptions& options_;
  std::string context_;
  GpuInfo gpu_;
  nvmlDevice_t handle_ = nullptr;
};

}  // namespace

Result<GpuInventory> DiscoverGpus(NvmlApi& api, const DiscoveryOptions& options) {
  unsigned int count = 0;
  PHX_RETURN_IF_ERROR(NvmlStatus(api, api.DeviceGetCount(&count), "nvmlDeviceGetCount"));

  GpuInventory inventory;
  // Versions are informational: a driver refusing them does not fail discovery.
  if (auto version = ReadString(api, "nvmlSystemGetDriverVersion", {},
                                [&](char* buf, unsigned int len) {
                                  return api.SystemGetDriverVersion(buf, len);
                                });
      version.ok()) {
    inventory.driver_version = std::move(version).value();
  }
  int cuda = 0;
  if (api.SystemGetCudaDriverVersion(&cuda) == NVML_SUCCESS) inventory.cuda_driver_version = cuda;

  std::vector<nvmlDevice_t> handles;
  inventory.gpus.reserve(count);
  handles.reserve(count);
  for (unsigned int i = 0; i < count; ++i) {
    auto [gpu, handle] = GpuReader(api, options, i).Read();
    // A GPU that failed half-way keeps its handle out of the link pass: its answers
    // can't be trusted (and a lost GPU would fail every query anyway).
    handles.push_back(gpu.status.ok() ? handle : nullptr);
    inventory.gpus.push_back(std::move(gpu));
  }
  inventory.links = internal::DiscoverLinks(api, handles, inventory.gpus);
  return inventory;
}

}  // namespace phalanx::nvml
