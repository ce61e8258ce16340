// MIG devices of one GPU: uuid, GPU/compute instance IDs, profile name and placement.
//
// The profile comes from the GPU instance: MIG handle -> GPU instance ID ->
// nvmlDeviceGetGpuInstanceById on the parent -> nvmlGpuInstanceGetInfo (profile ID,
// placement). Profile IDs are matched against nvmlDeviceGetGpuInstanceProfileInfo for
// every profile index, which gives the slice count, memory and whether it is a "+me"
// (REV1) profile. Compute-instance sub-slicing ("1c.3g.40gb") is not distinguished:
// such devices are named after their GPU instance.

#include <map>
#include <string>

#include <fmt/format.h>

#include "device-plugin/nvml/discovery_internal.h"
#include "device-plugin/nvml/mig_profile.h"
#include "device-plugin/nvml/nvml_status.h"

namespace phalanx::nvml::internal {
namespace {

constexpr uint64_t kMiB = 1024 * 1024;

// Profile ID -> what its name is made of, for every profile the GPU supports.
Result<std::map<unsigned int, MigProfileSpec>> ReadProfiles(NvmlApi& api, nvmlDevice_t parent,
                                                            const std::string& context) {
  std::map<unsigned int, MigProfileSpec> profiles;
  for (unsigned int p = 0; p < NVML_GPU_INSTANCE_PROFILE_COUNT; ++p) {
    nvmlGpuInstanceProfileInfo_t info{};
    const nvmlReturn_t r = api.DeviceGetGpuInstanceProfileInfo(parent, p, &info);
    // Profiles a GPU does not offer (e.g. REV1/REV2 on older boards) answer
    // NOT_SUPPORTED or INVALID_ARGUMENT.
    if (r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_INVALID_ARGUMENT) continue;
    PHX_RETURN_IF_ERROR(
        NvmlStatus(api, r, "nvmlDeviceGetGpuInstanceProfileInfo", context));
    profiles[info.id] = MigProfileSpec{
        info.sliceCount, info.memorySizeMB,
        p == NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1 || p == NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1};
  }
  return profiles;
}

}  // namespace

Status ReadMigDevices(NvmlApi& api, nvmlDevice_t parent, GpuInfo& gpu) {
  const std::string gpu_context = fmt::format("GPU {}", gpu.index);
  PHX_ASSIGN_OR_RETURN(auto profiles, ReadProfiles(api, parent, gpu_context));

  unsigned int max_devices = 0;
  PHX_RETURN_IF_ERROR(NvmlStatus(api, api.DeviceGetMaxMigDeviceCount(parent, &max_devices),
                                 "nvmlDeviceGetMaxMigDeviceCount", gpu_context));
  for (unsigned int i = 0; i < max_devices; ++i) {
    const std::string context = fmt::format("GPU {} MIG device {}", gpu.index, i);
    nvmlDevice_t mig = nullptr;
    const nvmlReturn_t r = api.DeviceGetMigDeviceHandleByIndex(parent, i, &mig);
    if (r == NVML_ERROR_NOT_FOUND) continue;  // an unused slot
    PHX_RETURN_IF_ERROR(NvmlStatus(api, r, "nvmlDeviceGetMigDeviceHandleByIndex", context));

    MigDeviceInfo device;
    PHX_ASSIGN_OR_RETURN(std::string uuid,
                         ReadString(api, "nvmlDeviceGetUUID", context,
                                    [&](char* buf, unsigned int len) {
                                      return api.DeviceGetUUID(mig, buf, len);
                                    }));
    device.uuid = GpuUuid(std::move(uuid));
    nvmlMemory_t memory{};
    PHX_RETURN_IF_ERROR(NvmlStatus(api, api.DeviceGetMemoryInfo(mig, &memory),
                                   "nvmlDeviceGetMemoryInfo", context));
    device.memory_mib = memory.total / kMiB;
    PHX_RETURN_IF_ERROR(NvmlStatus(api, api.DeviceGetGpuInstanceId(mig, &device.gpu_instance_id),
                                   "nvmlDeviceGetGpuInstanceId", context));
    PHX_RETURN_IF_ERROR(
        NvmlStatus(api, api.DeviceGetComputeInstanceId(mig, &device.compute_instance_id),
                   "nvmlDeviceGetComputeInstanceId", context));

    nvmlGpuInstance_t instance = nullptr;
    PHX_RETURN_IF_ERROR(
        NvmlStatus(api, api.DeviceGetGpuInstanceById(parent, device.gpu_instance_id, &instance),
                   "nvmlDeviceGetGpuInstanceById", context));
    nvmlGpuInstanceInfo_t info{};
    PHX_RETURN_IF_ERROR(NvmlStatus(api, api.GpuInstanceGetInfo(instance, &info),
                                   "nvmlGpuInstanceGetInfo", context));
    device.placement_start = info.placement.start;
    device.placement_size = info.placement.size;

    auto profile = profiles.find(info.profileId);
    if (profile == profiles.end()) {
      return InternalError(fmt::format(
          "{}: GPU instance {} has profile ID {} that nvmlDeviceGetGpuInstanceProfileInfo "
          "does not list",
          context, device.gpu_instance_id, info.profileId));
    }
    device.slices = profile->second.slices;
    device.profile = MigProfileName(profile->second, gpu.memory_mib);
    gpu.mig_devices.push_back(std::move(device));
  }
  return OkStatus();
}

}  // namespace phalanx::nvml::internal
