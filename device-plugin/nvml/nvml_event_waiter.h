// NvmlEventWaiter: XID and ECC events of a machine's GPUs, one at a time, with a timeout
// (the input of the device plugin's health loop).
//
// Create() makes one NVML event set and registers XidCriticalError, DoubleBitEccError
// and SingleBitEccError (the subset each GPU supports) on every readable GPU of a
// GpuInventory. A GPU that cannot be registered (events unsupported, GPU lost) is listed
// in unmonitored() with the reason instead of failing the waiter: the caller decides
// whether that GPU is unhealthy.
//
// Events that NVML attributes to a MIG instance (GPU/compute instance IDs set) are
// mapped to that MIG device's UUID using the inventory.
//
// Thread-safety: not thread-safe; owned and called by a single health-loop thread.
// `api` must outlive the waiter and have an open NvmlSession.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "core/base/ids.h"
#include "core/base/result.h"
#include "device-plugin/nvml/gpu_inventory.h"
#include "device-plugin/nvml/nvml_api.h"

namespace phalanx::nvml {

enum class NvmlEventType { kXidCriticalError, kDoubleBitEccError, kSingleBitEccError, kOther };

struct NvmlEvent {
  GpuUuid gpu_uuid;                  // the physical GPU
  std::optional<GpuUuid> mig_uuid;   // the MIG device, when NVML attributes it to one
  NvmlEventType type = NvmlEventType::kOther;
  unsigned long long event_type = 0;  // raw NVML event bit
  // The XID for kXidCriticalError (999 = unknown XID); 0 for other types.
  unsigned long long xid = 0;
  std::optional<unsigned int> gpu_instance_id;
  std::optional<unsigned int> compute_instance_id;
};

class NvmlEventWaiter {
 public:
  static constexpr unsigned long long kWatchedEvents =
      nvmlEventTypeXidCriticalError | nvmlEventTypeDoubleBitEccError |
      nvmlEventTypeSingleBitEccError;

  // Errors: the NvmlStatus of nvmlEventSetCreate (kUnimplemented when the driver has
  // no event API).
  static Result<std::unique_ptr<NvmlEventWaiter>> Create(NvmlApi& api,
                                                         const GpuInventory& inventory);
  ~NvmlEventWaiter();
  NvmlEventWaiter(const NvmlEventWaiter&) = delete;
  NvmlEventWaiter& operator=(const NvmlEventWaiter&) = delete;

  // Blocks up to `timeout` (clamped to [0, UINT_MAX] ms) for one event.
  // nullopt: nothing happened within the timeout. An error is a failure of the wait
  // itself (e.g. kUnknown after a driver hiccup, kUnavailable for a lost GPU), not
  // evidence against any particular GPU.
  Result<std::optional<NvmlEvent>> Wait(std::chrono::milliseconds timeout);

  // GPUs not registered, with the reason.
  const std::vector<std::pair<GpuUuid, Status>>& unmonitored() const { return unmonitored_; }
  // GPUs registered (the inventory positions' UUIDs).
  const std::vector<GpuUuid>& monitored() const { return monitored_; }

 private:
  struct Watched {
    nvmlDevice_t handle;
    const GpuInfo* gpu;  // points into gpus_
  };
  NvmlEventWaiter(NvmlApi& api, nvmlEventSet_t set, std::vector<GpuInfo> gpus);
  void Register();
  NvmlEvent Translate(const nvmlEventData_t& data);

  NvmlApi& api_;
  nvmlEventSet_t set_;
  std::vector<GpuInfo> gpus_;  // copy of the inventory's GPUs (for MIG mapping)
  std::vector<Watched> watched_;
  std::vector<GpuUuid> monitored_;
  std::vector<std::pair<GpuUuid, Status>> unmonitored_;
};

}  // namespace phalanx::nvml
