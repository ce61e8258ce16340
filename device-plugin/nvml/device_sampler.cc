#include "device-plugin/nvml/device_sampler.h"

#include <algorithm>
#include <map>

#include "device-plugin/nvml/nvml_status.h"

namespace phalanx::nvml {
namespace {

constexpr unsigned Bit(SampleQuery q) { return 1u << static_cast<unsigned>(q); }

bool IsUnsupported(nvmlReturn_t r) {
  return r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_FUNCTION_NOT_FOUND;
}

std::string ReadUuid(NvmlApi& api, nvmlDevice_t handle) {
  char buf[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
  if (api.DeviceGetUUID(handle, buf, sizeof(buf)) != NVML_SUCCESS) return {};
  buf[sizeof(buf) - 1] = '\0';
  return buf;
}

}  // namespace

std::string_view SampleQueryName(SampleQuery query) {
  switch (query) {
    case SampleQuery::kUtilizationRates: return "nvmlDeviceGetUtilizationRates";
    case SampleQuery::kProcessUtilization: return "nvmlDeviceGetProcessUtilization";
    case SampleQuery::kMemoryInfo: return "nvmlDeviceGetMemoryInfo";
    case SampleQuery::kPowerUsage: return "nvmlDeviceGetPowerUsage";
    case SampleQuery::kPowerField: return "nvmlDeviceGetFieldValues(NVML_FI_DEV_POWER_INSTANT)";
    case SampleQuery::kSmClock: return "nvmlDeviceGetClockInfo(NVML_CLOCK_SM)";
    case SampleQuery::kSmClockMax: return "nvmlDeviceGetMaxClockInfo(NVML_CLOCK_SM)";
    case SampleQuery::kGpm: return "GPM (nvmlGpmSampleGet/nvmlGpmMetricsGet)";
    case SampleQuery::kCount: break;
  }
  return "unknown";
}

DeviceSampler::DeviceSampler(NvmlApi& api, const GpuInventory& inventory) : api_(api) {
  for (const GpuInfo& gpu : inventory.gpus) {
    if (gpu.uuid.empty()) continue;
    devices_.push_back(Device{.uuid = gpu.uuid.str(), .parent_uuid = gpu.uuid.str(), .gpu_index = gpu.index});
    for (const MigDeviceInfo& m : gpu.mig_devices) {
      devices_.push_back(Device{.uuid = m.uuid.str(), .parent_uuid = gpu.uuid.str(), .gpu_index = gpu.index,
                                .gpu_instance_id = m.gpu_instance_id, .mig = true});
    }
  }
}

DeviceSampler::~DeviceSampler() { Release(); }

void DeviceSampler::Release() {
  for (Device& d : devices_) {
    for (nvmlGpmSample_t* sample : {&d.gpm_previous, &d.gpm_current}) {
      if (*sample != nullptr) (void)api_.GpmSampleFree(*sample);
      *sample = nullptr;
    }
    d.gpm_ready = false;
    d.gpm_have_previous = false;
  }
}

bool DeviceSampler::Resolve(Device& d) {
  if (d.handle != nullptr) return true;
  nvmlDevice_t gpu = nullptr;
  if (api_.DeviceGetHandleByIndex(d.gpu_index, &gpu) != NVML_SUCCESS) return false;
  if (!d.mig) {
    // The index must still be this GPU (the health monitor watches for swaps; we just skip).
    if (ReadUuid(api_, gpu) != d.uuid) return false;
    d.handle = gpu;
    return true;
  }
  d.parent = gpu;
  unsigned int max = 0;
  if (api_.DeviceGetMaxMigDeviceCount(gpu, &max) != NVML_SUCCESS) return false;
  for (unsigned int i = 0; i < max; ++i) {
    nvmlDevice_t mig = nullptr;
    if (api_.DeviceGetMigDeviceHandleByIndex(gpu, i, &mig) != NVML_SUCCESS) continue;
    if (ReadUuid(api_, mig) == d.uuid) {
      d.handle = mig;
      return true;
    }
  }
  return false;
}

bool DeviceSampler::Asks(const Device& d, SampleQuery query) const { return (d.unsupported & Bit(query)) == 0; }

bool DeviceSampler::Check(Device& d, SampleQuery query, nvmlReturn_t r, std::vector<SampleNotice>* notices) {
  nvmlReturn_t& last = d.last_error[static_cast<int>(query)];
  if (r == NVML_SUCCESS) {
    if (last != NVML_SUCCESS && notices) notices->push_back({d.uuid, query, false, OkStatus()});
    last = NVML_SUCCESS;
    return true;
  }
  if (IsUnsupported(r)) {
    d.unsupported |= Bit(query);
    if (notices) notices->push_back({d.uuid, query, true, NvmlStatus(api_, r, SampleQueryName(query), d.uuid)});
    return false;
  }
  ++errors_;
  if (r != last && notices) notices->push_back({d.uuid, query, false, NvmlStatus(api_, r, SampleQueryName(query), d.uuid)});
  last = r;
  // A lost GPU (or a reset one) gets a fresh handle on a later pass.
  if (r == NVML_ERROR_GPU_IS_LOST || r == NVML_ERROR_INVALID_ARGUMENT) d.handle = nullptr;
  if (query == SampleQuery::kGpm) d.gpm_have_previous = false;  // the next pair starts over
  return false;
}

void DeviceSampler::ReadProcessUtilisation(Device& d, DeviceSample& s, std::vector<SampleNotice>* notices) {
  unsigned int count = 0;
  nvmlReturn_t r = api_.DeviceGetProcessUtilization(d.handle, nullptr, &count, d.last_process_sample_us);
  if (r == NVML_ERROR_NOT_FOUND || (r == NVML_SUCCESS && count == 0)) {  // no process ran since: idle
    (void)Check(d, SampleQuery::kProcessUtilization, NVML_SUCCESS, notices);
    s.sm_util = 0;
    s.mem_util = 0;
    return;
  }
  if (r != NVML_ERROR_INSUFFICIENT_SIZE && r != NVML_SUCCESS) {
    (void)Check(d, SampleQuery::kProcessUtilization, r, notices);
    return;
  }
  process_buffer_.assign(count, nvmlProcessUtilizationSample_t{});
  r = api_.DeviceGetProcessUtilization(d.handle, process_buffer_.data(), &count, d.last_process_sample_us);
  if (r == NVML_ERROR_NOT_FOUND) {  // the samples aged out between the two calls
    r = NVML_SUCCESS;
    count = 0;
  }
  if (!Check(d, SampleQuery::kProcessUtilization, r, notices)) return;
  // Mean per process over its samples, summed over processes (they share the SMs).
  struct Acc {
    double sm = 0, mem = 0;
    int n = 0;
  };
  std::map<unsigned int, Acc> by_pid;
  for (unsigned int i = 0; i < std::min<size_t>(count, process_buffer_.size()); ++i) {
    const auto& p = process_buffer_[i];
    Acc& a = by_pid[p.pid];
    a.sm += p.smUtil;
    a.mem += p.memUtil;
    ++a.n;
    d.last_process_sample_us = std::max(d.last_process_sample_us, p.timeStamp);
  }
  double sm = 0, mem = 0;
  for (const auto& [pid, a] : by_pid) {
    sm += a.sm / a.n;
    mem += a.mem / a.n;
  }
  s.sm_util = std::min(100.0, sm);
  s.mem_util = std::min(100.0, mem);
}

void DeviceSampler::ReadUtilisation(Device& d, DeviceSample& s, std::vector<SampleNotice>* notices) {
  if (Asks(d, SampleQuery::kUtilizationRates)) {
    nvmlUtilization_t u{};
    if (Check(d, SampleQuery::kUtilizationRates, api_.DeviceGetUtilizationRates(d.handle, &u), notices)) {
      s.sm_util = std::min(100u, u.gpu);
      s.mem_util = std::min(100u, u.memory);
      return;
    }
    if (Asks(d, SampleQuery::kUtilizationRates)) return;  // a transient error: no fallback this pass
  }
  if (Asks(d, SampleQuery::kProcessUtilization)) ReadProcessUtilisation(d, s, notices);
}

void DeviceSampler::ReadPower(Device& d, DeviceSample& s, std::vector<SampleNotice>* notices) {
  if (Asks(d, SampleQuery::kPowerUsage)) {
    unsigned int mw = 0;
    if (Check(d, SampleQuery::kPowerUsage, api_.DeviceGetPowerUsage(d.handle, &mw), notices)) {
      s.power_watts = mw / 1000.0;
      return;
    }
    if (Asks(d, SampleQuery::kPowerUsage)) return;
  }
  if (!Asks(d, SampleQuery::kPowerField)) return;
  nvmlFieldValue_t field{};
  field.fieldId = NVML_FI_DEV_POWER_INSTANT;
  nvmlReturn_t r = api_.DeviceGetFieldValues(d.handle, 1, &field);
  if (r == NVML_SUCCESS) r = field.nvmlReturn;
  if (!Check(d, SampleQuery::kPowerField, r, notices)) return;
  switch (field.valueType) {
    case NVML_VALUE_TYPE_DOUBLE: s.power_watts = field.value.dVal / 1000.0; break;
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: s.power_watts = static_cast<double>(field.value.ullVal) / 1000.0; break;
    case NVML_VALUE_TYPE_UNSIGNED_LONG: s.power_watts = static_cast<double>(field.value.ulVal) / 1000.0; break;
    default: s.power_watts = field.value.uiVal / 1000.0; break;
  }
}

void DeviceSampler::ReadGpm(Device& d, DeviceSample& s, std::vector<SampleNotice>* notices) {
  if (!Asks(d, SampleQuery::kGpm)) return;
  nvmlDevice_t gpu = d.mig ? d.parent : d.handle;
  if (gpu == nullptr) return;
  if (!d.gpm_ready) {
    nvmlGpmSupport_t support{NVML_GPM_SUPPORT_VERSION, 0};
    nvmlReturn_t r = api_.GpmQueryDeviceSupport(gpu, &support);
    if (r == NVML_SUCCESS && support.isSupportedDevice == 0) r = NVML_ERROR_NOT_SUPPORTED;
    if (r == NVML_SUCCESS && d.gpm_previous == nullptr) r = api_.GpmSampleAlloc(&d.gpm_previous);
    if (r == NVML_SUCCESS && d.gpm_current == nullptr) r = api_.GpmSampleAlloc(&d.gpm_current);
    if (!Check(d, SampleQuery::kGpm, r, notices)) return;
    d.gpm_ready = true;
  }
  const nvmlReturn_t got = d.mig ? api_.GpmMigSampleGet(gpu, d.gpu_instance_id, d.gpm_current)
                                 : api_.GpmSampleGet(gpu, d.gpm_current);
  if (!Check(d, SampleQuery::kGpm, got, notices)) return;
  if (d.gpm_have_previous) {
    if (!gpm_request_) gpm_request_ = std::make_unique<nvmlGpmMetricsGet_t>();
    nvmlGpmMetricsGet_t& m = *gpm_request_;
    m = nvmlGpmMetricsGet_t{};
    m.version = NVML_GPM_METRICS_GET_VERSION;
    m.numMetrics = 2;
    m.sample1 = d.gpm_previous;
    m.sample2 = d.gpm_current;
    m.metrics[0].metricId = NVML_GPM_METRIC_SM_UTIL;
    m.metrics[1].metricId = NVML_GPM_METRIC_SM_OCCUPANCY;
    if (!Check(d, SampleQuery::kGpm, api_.GpmMetricsGet(&m), notices)) return;
    auto percent = [](double v) { return std::clamp(v, 0.0, 100.0); };
    if (m.metrics[0].nvmlReturn == NVML_SUCCESS) s.sm_active = percent(m.metrics[0].value);
    if (m.metrics[1].nvmlReturn == NVML_SUCCESS) s.sm_occupancy = percent(m.metrics[1].value);
  }
  std::swap(d.gpm_previous, d.gpm_current);
  d.gpm_have_previous = true;
}

std::vector<DeviceSample> DeviceSampler::SampleAll(std::vector<SampleNotice>* notices) {
  std::vector<DeviceSample> out;
  out.reserve(devices_.size());
  for (Device& d : devices_) {
    DeviceSample& s = out.emplace_back();
    s.uuid = d.uuid;
    s.parent_uuid = d.parent_uuid;
    s.mig = d.mig;
    if (!Resolve(d)) continue;  // lost or not readable now: no values this pass
    ReadUtilisation(d, s, notices);
    if (d.handle == nullptr) continue;
    if (Asks(d, SampleQuery::kMemoryInfo)) {
      nvmlMemory_t m{};
      if (Check(d, SampleQuery::kMemoryInfo, api_.DeviceGetMemoryInfo(d.handle, &m), notices)) {
        s.memory_used_bytes = m.used;
        s.memory_total_bytes = m.total;
      }
    }
    ReadGpm(d, s, notices);
    if (!s.sm_util && s.sm_active) {  // MIG devices: SM activity is the utilisation there is
      s.sm_util = s.sm_active;
      s.sm_util_from_gpm = true;
    }
    if (d.mig || d.handle == nullptr) continue;  // power and clocks belong to the whole GPU
    ReadPower(d, s, notices);
    if (d.handle == nullptr) continue;
    if (Asks(d, SampleQuery::kSmClock)) {
      unsigned int mhz = 0;
      if (Check(d, SampleQuery::kSmClock, api_.DeviceGetClockInfo(d.handle, NVML_CLOCK_SM, &mhz), notices)) {
        s.sm_clock_mhz = mhz;
      }
    }
    if (!d.sm_clock_max_mhz && d.handle != nullptr && Asks(d, SampleQuery::kSmClockMax)) {
      unsigned int mhz = 0;
      if (Check(d, SampleQuery::kSmClockMax, api_.DeviceGetMaxClockInfo(d.handle, NVML_CLOCK_SM, &mhz), notices)) {
        d.sm_clock_max_mhz = mhz;
      }
    }
    s.sm_clock_max_mhz = d.sm_clock_max_mhz;
  }
  return out;
}

}  // namespace phalanx::nvml
