// DeviceSampler: one utilisation reading of every GPU and MIG device of an inventory
// (issue 18 §1), for the device plugin's sampling thread.
//
// Per device and pass:
//   SM / memory-controller utilisation  nvmlDeviceGetUtilizationRates; where that is
//       unsupported, nvmlDeviceGetProcessUtilization (the samples since the previous pass:
//       per process the mean smUtil/memUtil, summed over processes, capped at 100). Both are
//       unsupported on MIG devices (NVML: "querying utilization is not supported on
//       MIG-enabled GPUs"), so MIG devices have SM utilisation only through GPM (below).
//   memory used/total                   nvmlDeviceGetMemoryInfo (GPUs and MIG devices)
//   power draw                          nvmlDeviceGetPowerUsage, else field
//                                       NVML_FI_DEV_POWER_INSTANT (GPUs only)
//   SM clock and its maximum            nvmlDeviceGetClockInfo / GetMaxClockInfo (GPUs only)
//   SM activity and occupancy           GPM (nvmlGpmQueryDeviceSupport, nvmlGpmSampleGet or, per
//                                       MIG GPU instance, nvmlGpmMigSampleGet, then
//                                       nvmlGpmMetricsGet SM_UTIL / SM_OCCUPANCY between this
//                                       pass's sample and the previous one); Hopper and newer.
//                                       Where the utilisation rates are missing (MIG devices), the
//                                       SM activity stands in for sm_util.
// Every entry point is optional. A query answering NOT_SUPPORTED (or whose symbol the
// library lacks) on a device is never asked of that device again and is reported once in
// `notices`; any other error leaves that value unset for this pass and is reported only
// when the device's error for that query changes (a GPU that keeps failing is one notice,
// not one per pass). Nothing here touches device health.
//
// Thread-safety: not thread-safe; owned by the sampling thread. `api` must outlive it and
// have an open NvmlSession.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "device-plugin/nvml/gpu_inventory.h"
#include "device-plugin/nvml/nvml_api.h"

namespace phalanx::nvml {

// Queries the sampler makes, for notices and metrics ("utilization-rates", ...).
enum class SampleQuery {
  kUtilizationRates,
  kProcessUtilization,
  kMemoryInfo,
  kPowerUsage,
  kPowerField,
  kSmClock,
  kSmClockMax,
  kGpm,
  kCount,
};
std::string_view SampleQueryName(SampleQuery query);

struct DeviceSample {
  std::string uuid;         // GPU-… or MIG-…
  std::string parent_uuid;  // the physical GPU (== uuid for a GPU)
  bool mig = false;
  std::optional<double> sm_util;   // percent, 0..100
  std::optional<double> mem_util;  // memory-controller percent, 0..100
  std::optional<uint64_t> memory_used_bytes;
  std::optional<uint64_t> memory_total_bytes;
  std::optional<double> power_watts;
  std::optional<double> sm_clock_mhz;
  std::optional<double> sm_clock_max_mhz;
  std::optional<double> sm_active;     // GPM: % of SMs busy between the last two passes
  std::optional<double> sm_occupancy;  // GPM: % of resident warps vs the maximum
  bool sm_util_from_gpm = false;       // sm_util is the GPM SM activity (no utilisation rates)
};

struct SampleNotice {
  std::string device;  // UUID
  SampleQuery query = SampleQuery::kUtilizationRates;
  bool unsupported = false;  // permanent for this device (never asked again)
  Status status;             // the error; OK = the query works again after failing
};

class DeviceSampler {
 public:
  DeviceSampler(NvmlApi& api, const GpuInventory& inventory);
  // Frees the GPM samples (Release()); NVML must still be loaded and initialised.
  ~DeviceSampler();
  DeviceSampler(const DeviceSampler&) = delete;
  DeviceSampler& operator=(const DeviceSampler&) = delete;

  // Frees the GPM samples now (idempotent): call it before NVML goes away.
  void Release();

  // One pass over every device of the inventory (GPUs first, each followed by its MIG
  // devices). `notices` (may be null) receives what changed, as described above.
  std::vector<DeviceSample> SampleAll(std::vector<SampleNotice>* notices);

  size_t device_count() const { return devices_.size(); }
  uint64_t errors() const { return errors_; }

 private:
  struct Device {
    std::string uuid;
    std::string parent_uuid;
    unsigned int gpu_index = 0;
    unsigned int gpu_instance_id = 0;  // MIG: for nvmlGpmMigSampleGet
    bool mig = false;
    nvmlDevice_t handle = nullptr;  // resolved lazily; reset after GPU_IS_LOST
    nvmlDevice_t parent = nullptr;  // MIG: the GPU's handle
    unsigned unsupported = 0;       // bit per SampleQuery
    nvmlReturn_t last_error[static_cast<int>(SampleQuery::kCount)] = {};
    unsigned long long last_process_sample_us = 0;
    std::optional<double> sm_clock_max_mhz;  // static: read once
    bool gpm_ready = false;                  // support checked, samples allocated
    nvmlGpmSample_t gpm_previous = nullptr, gpm_current = nullptr;
    bool gpm_have_previous = false;
  };

  bool Resolve(Device& d);
  // True when the value may be used. Records support and error transitions.
  bool Check(Device& d, SampleQuery query, nvmlReturn_t r, std::vector<SampleNotice>* notices);
  bool Asks(const Device& d, SampleQuery query) const;
  void ReadUtilisation(Device& d, DeviceSample& s, std::vector<SampleNotice>* notices);
  void ReadProcessUtilisation(Device& d, DeviceSample& s, std::vector<SampleNotice>* notices);
  void ReadPower(Device& d, DeviceSample& s, std::vector<SampleNotice>* notices);
  void ReadGpm(Device& d, DeviceSample& s, std::vector<SampleNotice>* notices);

  NvmlApi& api_;
  std::vector<Device> devices_;
  std::vector<nvmlProcessUtilizationSample_t> process_buffer_;
  std::unique_ptr<nvmlGpmMetricsGet_t> gpm_request_;  // 13 KiB: allocated once
  uint64_t errors_ = 0;
};

}  // namespace phalanx::nvml
