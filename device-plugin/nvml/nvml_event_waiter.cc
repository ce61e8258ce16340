#include "device-plugin/nvml/nvml_event_waiter.h"

#include <algorithm>
#include <climits>

#include <fmt/format.h>

#include "device-plugin/nvml/discovery_internal.h"
#include "device-plugin/nvml/nvml_status.h"

namespace phalanx::nvml {

Result<std::unique_ptr<NvmlEventWaiter>> NvmlEventWaiter::Create(NvmlApi& api,
                                                                 const GpuInventory& inventory) {
  nvmlEventSet_t set = nullptr;
  PHX_RETURN_IF_ERROR(NvmlStatus(api, api.EventSetCreate(&set), "nvmlEventSetCreate"));
  std::unique_ptr<NvmlEventWaiter> waiter(new NvmlEventWaiter(api, set, inventory.gpus));
  waiter->Register();
  return waiter;
}

NvmlEventWaiter::NvmlEventWaiter(NvmlApi& api, nvmlEventSet_t set, std::vector<GpuInfo> gpus)
    : api_(api), set_(set), gpus_(std::move(gpus)) {}

NvmlEventWaiter::~NvmlEventWaiter() { (void)api_.EventSetFree(set_); }

void NvmlEventWaiter::Register() {
  for (const GpuInfo& gpu : gpus_) {
    if (!gpu.status.ok()) {
      unmonitored_.emplace_back(gpu.uuid, gpu.status);
      continue;
    }
    const std::string context = fmt::format("GPU {}", gpu.index);
    auto skip = [&](Status why) { unmonitored_.emplace_back(gpu.uuid, std::move(why)); };

    nvmlDevice_t handle = nullptr;
    if (Status s = NvmlStatus(api_, api_.DeviceGetHandleByIndex(gpu.index, &handle),
                              "nvmlDeviceGetHandleByIndex", context);
        !s.ok()) {
      skip(std::move(s));
      continue;
    }
    // NVML indices are stable while the driver is loaded, but a GPU that disappeared and
    // came back would renumber the rest: never attach events to the wrong UUID.
    auto uuid = internal::ReadString(api_, "nvmlDeviceGetUUID", context,
                                     [&](char* buf, unsigned int len) {
                                       return api_.DeviceGetUUID(handle, buf, len);
                                     });
    if (!uuid.ok()) {
      skip(uuid.status());
      continue;
    }
    if (*uuid != gpu.uuid.str()) {
      skip(FailedPreconditionError(fmt::format("{}: UUID changed from {} to {} since discovery",
                                               context, gpu.uuid.str(), *uuid)));
      continue;
    }
    unsigned long long supported = 0;
    if (Status s = NvmlStatus(api_, api_.DeviceGetSupportedEventTypes(handle, &supported),
                              "nvmlDeviceGetSupportedEventTypes", context);
        !s.ok()) {
      skip(std::move(s));
      continue;
    }
    const unsigned long long wanted = supported & kWatchedEvents;
    if (wanted == 0) {
      skip(UnimplementedError(fmt::format("{}: supports none of the XID/ECC events", context)));
      continue;
    }
    if (Status s = NvmlStatus(api_, api_.DeviceRegisterEvents(handle, wanted, set_),
                              "nvmlDeviceRegisterEvents", context);
        !s.ok()) {
      skip(std::move(s));
      continue;
    }
    watched_.push_back(Watched{handle, &gpu});
    monitored_.push_back(gpu.uuid);
  }
}

Result<std::optional<NvmlEvent>> NvmlEventWaiter::Wait(std::chrono::milliseconds timeout) {
  const long long ms = std::clamp<long long>(timeout.count(), 0, UINT_MAX);
  nvmlEventData_t data{};
  data.gpuInstanceId = kNoInstanceId;     // the legacy wait never writes these
  data.computeInstanceId = kNoInstanceId;
  const nvmlReturn_t r = api_.EventSetWait(set_, &data, static_cast<unsigned int>(ms));
  if (r == NVML_ERROR_TIMEOUT) return std::optional<NvmlEvent>();
  PHX_RETURN_IF_ERROR(NvmlStatus(api_, r, "nvmlEventSetWait"));
  return std::optional<NvmlEvent>(Translate(data));
}

NvmlEvent NvmlEventWaiter::Translate(const nvmlEventData_t& data) {
  NvmlEvent event;
  event.event_type = data.eventType;
  switch (data.eventType) {
    case nvmlEventTypeXidCriticalError:
      event.type = NvmlEventType::kXidCriticalError;
      event.xid = data.eventData;
      break;
    case nvmlEventTypeDoubleBitEccError:
      event.type = NvmlEventType::kDoubleBitEccError;
      break;
    case nvmlEventTypeSingleBitEccError:
      event.type = NvmlEventType::kSingleBitEccError;
      break;
    default:
      event.type = NvmlEventType::kOther;
      break;
  }
  if (data.gpuInstanceId != kNoInstanceId) event.gpu_instance_id = data.gpuInstanceId;
  if (data.computeInstanceId != kNoInstanceId) event.compute_instance_id = data.computeInstanceId;

  const GpuInfo* gpu = nullptr;
  for (const Watched& w : watched_) {
    if (w.handle == data.device) gpu = w.gpu;
  }
  if (gpu == nullptr) {
    // Not a handle we registered (should not happen): ask NVML who it is.
    auto uuid = internal::ReadString(api_, "nvmlDeviceGetUUID", {},
                                     [&](char* buf, unsigned int len) {
                                       return api_.DeviceGetUUID(data.device, buf, len);
                                     });
    if (uuid.ok()) event.gpu_uuid = GpuUuid(*uuid);
    return event;
  }
  event.gpu_uuid = gpu->uuid;
  if (event.gpu_instance_id) {
    for (const MigDeviceInfo& mig : gpu->mig_devices) {
      if (mig.gpu_instance_id == *event.gpu_instance_id &&
          (!event.compute_instance_id || mig.compute_instance_id == *event.compute_instance_id)) {
        event.mig_uuid = mig.uuid;
        break;
      }
    }
  }
  return event;
}

}  // namespace phalanx::nvml
