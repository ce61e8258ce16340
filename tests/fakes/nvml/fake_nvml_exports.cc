// The exported NVML C functions of the fake driver: thin translations onto FakeDriver.
//
// Every symbol is declared from device-plugin/nvml/nvml_entry_points.inc, so a definition
// here whose signature drifts from the binding's fails to compile. Which symbols a build
// exports is decided by its linker version script (generated in CMakeLists.txt): the
// legacy variant hides the versioned names (_v2/_v3), nvmlDeviceGetNumaNodeId and
// nvmlDeviceGetNvLinkRemoteDeviceType, like a pre-R450 driver.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>

#include "device-plugin/nvml/nvml_types.h"
#include "tests/fakes/nvml/fake_driver.h"

#define FAKE_NVML_EXPORT __attribute__((visibility("default")))

// C declarations of every entry point, from the shared list.
#define NVML_FUNCTION(method, required, params, args) using FakeSig##method = nvmlReturn_t params;
#define NVML_SYMBOL(method, symbol) extern "C" FAKE_NVML_EXPORT FakeSig##method symbol;
#include "device-plugin/nvml/nvml_entry_points.inc"
extern "C" FAKE_NVML_EXPORT const char* nvmlErrorString(nvmlReturn_t result);

using phalanx::fake_nvml::FakeDriver;
using phalanx::fake_nvml::FakeGpu;
using phalanx::fake_nvml::MigProfile;
using phalanx::fake_nvml::PciAddress;
using phalanx::fake_nvml::RemoteType;
using Target = FakeDriver::Target;

namespace {

constexpr unsigned long long kMiB = 1024ull * 1024ull;
constexpr unsigned int kMaxMigDevices = 7;

FakeDriver& Driver() { return FakeDriver::Get(); }

nvmlReturn_t CopyString(const std::string& value, char* buffer, unsigned int length) {
  if (buffer == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (length < value.size() + 1) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(buffer, value.c_str(), value.size() + 1);
  return NVML_SUCCESS;
}

// The pre-_v2 layout of nvmlPciInfo_t: a 16-byte busId first, four reserved words last.
struct PciInfoV1 {
  char busId[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  unsigned int reserved[4];
};

nvmlReturn_t FillPci(const PciAddress& a, unsigned int device_id, nvmlPciInfo_t* out, int version) {
  if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (version == 1) {
    PciInfoV1 v1{};
    std::snprintf(v1.busId, sizeof(v1.busId), "%04X:%02X:%02X.0", a.domain, a.bus, a.device);
    v1.domain = a.domain;
    v1.bus = a.bus;
    v1.device = a.device;
    v1.pciDeviceId = device_id;
    std::memcpy(out, &v1, sizeof(v1));  // the legacy call writes only its own, shorter struct
    return NVML_SUCCESS;
  }
  std::snprintf(out->busIdLegacy, sizeof(out->busIdLegacy), "%04X:%02X:%02X.0", a.domain, a.bus,
                a.device);
  out->domain = a.domain;
  out->bus = a.bus;
  out->device = a.device;
  out->pciDeviceId = device_id;
  out->pciSubSystemId = 0;
  if (version >= 3) {
    std::snprintf(out->busId, sizeof(out->busId), "%08X:%02X:%02X.0", a.domain, a.bus, a.device);
  }
  return NVML_SUCCESS;
}

nvmlReturn_t PciInfo(nvmlDevice_t device, nvmlPciInfo_t* pci, int version) {
  // A MIG device reports its parent's PCI identity.
  return Driver().WithDevice(device, [&](const Target& t) {
    return FillPci(t.gpu.pci, t.gpu.pci_device_id, pci, version);
  });
}

// Checks shared by the per-link queries: physical GPU with NVLink, link in range.
nvmlReturn_t CheckLink(const Target& t, unsigned int link) {
  if (t.mig != nullptr || t.gpu.nvlinks.empty()) return NVML_ERROR_NOT_SUPPORTED;
  if (link >= NVML_NVLINK_MAX_LINKS) return NVML_ERROR_INVALID_ARGUMENT;
  return NVML_SUCCESS;
}

nvmlReturn_t RemotePci(nvmlDevice_t device, unsigned int link, nvmlPciInfo_t* pci, int version) {
  return Driver().WithDevice(device, [&](const Target& t) {
    if (nvmlReturn_t r = CheckLink(t, link); r != NVML_SUCCESS) return r;
    if (link >= t.gpu.nvlinks.size()) return NVML_ERROR_INVALID_ARGUMENT;  // inactive link
    return FillPci(t.gpu.nvlinks[link].remote, 0, pci, version);
  });
}

// Utilisation sampling: the symbol's refusal on this device, or NVML_SUCCESS. Machine or
// GPU "unsupported" lists and FAKE_NVML_UNSUPPORTED give NOT_SUPPORTED, FAKE_NVML_FAILING
// gives UNKNOWN (both env lists re-read on every call).
bool EnvListHas(const char* variable, const char* symbol) {
  const char* value = std::getenv(variable);
  if (value == nullptr) return false;
  std::stringstream list(value);
  std::string item;
  while (std::getline(list, item, ',')) {
    if (item == symbol) return true;
  }
  return false;
}

nvmlReturn_t Refusal(const Target& t, const char* symbol) {
  if (t.machine.unsupported.count(symbol) || t.gpu.unsupported.count(symbol) ||
      EnvListHas("FAKE_NVML_UNSUPPORTED", symbol)) {
    return NVML_ERROR_NOT_SUPPORTED;
  }
  if (EnvListHas("FAKE_NVML_FAILING", symbol)) return NVML_ERROR_UNKNOWN;
  return NVML_SUCCESS;
}

double SecondsSinceLoad(const Target& t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t.machine.loaded).count();
}

unsigned long long NowMicros() {
  return static_cast<unsigned long long>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
}

// Board power and SM clock follow the SM curve: 60 W + 6 W per percent, 345 MHz idle up to
// 1980 MHz (the H100's maximum) at 100 %.
constexpr unsigned int kMaxSmClockMhz = 1980;
constexpr unsigned int kIdleSmClockMhz = 345;
unsigned int PowerMilliwatts(double sm) { return static_cast<unsigned int>((60.0 + 6.0 * sm) * 1000.0); }

const MigProfile* ProfileOf(const Target& t) {
  return t.mig != nullptr ? &t.machine.mig_profiles.at(t.mig->profile) : nullptr;
}

}  // namespace

extern "C" {

// ---- Lifecycle and system ------------------------------------------------------------
nvmlReturn_t nvmlInit_v2() { return Driver().Init(); }
nvmlReturn_t nvmlInit() { return Driver().Init(); }
nvmlReturn_t nvmlShutdown() { return Driver().Shutdown(); }

const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT: return "Timeout";
    case NVML_ERROR_FUNCTION_NOT_FOUND: return "Function Not Found";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    case NVML_ERROR_UNKNOWN: return "Unknown Error";
    default: return "Unknown Error";
  }
}

nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  return Driver().WithMachine(
      [&](const auto& m) { return CopyString(m.driver_version, version, length); });
}

static nvmlReturn_t CudaVersion(int* version) {
  if (version == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  return Driver().WithMachine([&](const auto& m) {
    *version = m.cuda_driver_version;
    return NVML_SUCCESS;
  });
}
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* version) { return CudaVersion(version); }
nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* version) { return CudaVersion(version); }

static nvmlReturn_t Count(unsigned int* count) {
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  return Driver().WithMachine([&](const auto& m) {
    *count = static_cast<unsigned int>(m.gpus.size());
    return NVML_SUCCESS;
  });
}
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) { return Count(count); }
nvmlReturn_t nvmlDeviceGetCount(unsigned int* count) { return Count(count); }

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  return Driver().HandleByIndex(index, device);
}
nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t* device) {
  return Driver().HandleByIndex(index, device);
}

// ---- Identity ------------------------------------------------------------------------
nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int* index) {
  return Driver().WithDevice(device, [&](const Target& t) {
    if (index == nullptr || t.mig != nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *index = t.gpu.index;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  return Driver().WithDevice(device, [&](const Target& t) {
    return CopyString(t.mig != nullptr ? t.mig->uuid : t.gpu.uuid, uuid, length);
  });
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  return Driver().WithDevice(device, [&](const Target& t) {
    const MigProfile* profile = ProfileOf(t);
    return CopyString(profile != nullptr ? t.gpu.name + " MIG " + profile->name : t.gpu.name,
                      name, length);
  });
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  return Driver().WithDevice(device, [&](const Target& t) {
    if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const MigProfile* profile = ProfileOf(t);
    memory->total = (profile != nullptr ? profile->memory_mib : t.gpu.memory_mib) * kMiB;
    memory->used = std::min(memory->total,
                            (t.mig != nullptr ? t.mig->memory_used_mib : t.gpu.utilisation.memory_used_mib) * kMiB);
    memory->free = memory->total - memory->used;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return PciInfo(device, pci, 3);
}
nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return PciInfo(device, pci, 2);
}
nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return PciInfo(device, pci, 1);
}

nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t device, unsigned int* node) {
  return Driver().WithDevice(device, [&](const Target& t) {
    if (node == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (t.gpu.numa_node < 0) return NVML_ERROR_NOT_SUPPORTED;
    *node = static_cast<unsigned int>(t.gpu.numa_node);
    return NVML_SUCCESS;
  });
}

// ---- Topology and NVLink -------------------------------------------------------------
nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t device1, nvmlDevice_t device2,
                                                 nvmlGpuTopologyLevel_t* path_info) {
  return Driver().WithDevicePair(device1, device2, [&](const Target& a, const Target& b) {
    if (path_info == nullptr || a.mig != nullptr || b.mig != nullptr) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    *path_info = static_cast<nvmlGpuTopologyLevel_t>(a.machine.CommonAncestor(a.gpu, b.gpu));
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link,
                                      nvmlEnableState_t* is_active) {
  return Driver().WithDevice(device, [&](const Target& t) {
    if (is_active == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t r = CheckLink(t, link); r != NVML_SUCCESS) return r;
    *is_active = link < t.gpu.nvlinks.size() ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetNvLinkVersion(nvmlDevice_t device, unsigned int link,
                                        unsigned int* version) {
  return Driver().WithDevice(device, [&](const Target& t) {
    if (version == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t r = CheckLink(t, link); r != NVML_SUCCESS) return r;
    *version = t.machine.nvlink_version;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device, unsigned int link,
                                                 nvmlPciInfo_t* pci) {
  return RemotePci(device, link, pci, 3);
}
nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo(nvmlDevice_t device, unsigned int link,
                                              nvmlPciInfo_t* pci) {
  return RemotePci(device, link, pci, 1);
}

nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t device, unsigned int link,
                                                 nvmlIntNvLinkDeviceType_t* type) {
  return Driver().WithDevice(device, [&](const Target& t) {
    if (type == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t r = CheckLink(t, link); r != NVML_SUCCESS) return r;
    if (link >= t.gpu.nvlinks.size()) return NVML_ERROR_INVALID_ARGUMENT;
    *type = t.gpu.nvlinks[link].type == RemoteType::kSwitch ? NVML_NVLINK_DEVICE_TYPE_SWITCH
                                                             : NVML_NVLINK_DEVICE_TYPE_GPU;
    return NVML_SUCCESS;
  });
}

// ---- MIG -----------------------------------------------------------------------------
nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* current_mode,
                                  unsigned int* pending_mode) {
  return Driver().WithDevice(device, [&](const Target& t) {
    if (current_mode == nullptr || pending_mode == nullptr || t.mig != nullptr) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    if (!t.gpu.mig_capable) return NVML_ERROR_NOT_SUPPORTED;
    *current_mode = *pending_mode = t.gpu.mig_enabled ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int* count) {
  return Driver().WithDevice(device, [&](const Target& t) {
    if (count == nullptr || t.mig != nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!t.gpu.mig_capable) return NVML_ERROR_NOT_SUPPORTED;
    *count = kMaxMigDevices;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
                                                 nvmlDevice_t* mig_device) {
  return Driver().MigHandleByIndex(device, index, mig_device);
}

nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t mig_device,
                                                          nvmlDevice_t* device) {
  return Driver().ParentOfMig(mig_device, device);
}

nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int* id) {
  return Driver().WithDevice(device, [&](const Target& t) {
    if (id == nullptr || t.mig == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *id = t.mig->gpu_instance_id;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int* id) {
  return Driver().WithDevice(device, [&](const Target& t) {
    if (id == nullptr || t.mig == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *id = t.mig->compute_instance_id;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(nvmlDevice_t device, unsigned int profile,
                                                 nvmlGpuInstanceProfileInfo_t* info) {
  return Driver().WithDevice(device, [&](const Target& t) {
    if (info == nullptr || t.mig != nullptr || profile >= NVML_GPU_INSTANCE_PROFILE_COUNT) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    if (!t.gpu.mig_capable) return NVML_ERROR_NOT_SUPPORTED;
    for (const MigProfile& p : t.machine.mig_profiles) {
      if (p.index != profile) continue;
      *info = nvmlGpuInstanceProfileInfo_t{};
      info->id = p.id;
      info->isP2pSupported = 0;
      info->sliceCount = p.slices;
      info->instanceCount = p.instances;
      info->multiprocessorCount = p.multiprocessors;
      info->memorySizeMB = p.memory_mib;
      return NVML_SUCCESS;
    }
    return NVML_ERROR_NOT_SUPPORTED;
  });
}

nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t device, unsigned int id,
                                          nvmlGpuInstance_t* gpu_instance) {
  return Driver().GpuInstanceById(device, id, gpu_instance);
}

nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gpu_instance, nvmlGpuInstanceInfo_t* info) {
  return Driver().GpuInstanceInfo(gpu_instance, info);
}

// ---- Utilisation sampling --------------------------------------------------------------
// Like the real driver, utilisation, power and clocks are not reported per MIG device.
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t* utilization) {
  return Driver().WithDevice(device, [&](const Target& t) {
    if (utilization == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (t.mig != nullptr || t.gpu.mig_enabled) return NVML_ERROR_NOT_SUPPORTED;
    if (nvmlReturn_t r = Refusal(t, "nvmlDeviceGetUtilizationRates"); r != NVML_SUCCESS) return r;
    const double s = SecondsSinceLoad(t);
    utilization->gpu = static_cast<unsigned int>(t.gpu.utilisation.SmAt(s) + 0.5);
    utilization->memory = static_cast<unsigned int>(t.gpu.utilisation.MemoryAt(s) + 0.5);
    return NVML_SUCCESS;
  });
}

// One process (pid 4242 + GPU index) with one sample per call while the curve is above 0;
// none (NOT_FOUND) when the GPU is idle or nothing is newer than last_seen.
nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device, nvmlProcessUtilizationSample_t* utilization,
                                             unsigned int* count, unsigned long long last_seen) {
  return Driver().WithDevice(device, [&](const Target& t) {
    if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (t.mig != nullptr || t.gpu.mig_enabled) return NVML_ERROR_NOT_SUPPORTED;
    if (nvmlReturn_t r = Refusal(t, "nvmlDeviceGetProcessUtilization"); r != NVML_SUCCESS) return r;
    const double s = SecondsSinceLoad(t);
    const unsigned long long now = NowMicros();
    const double sm = t.gpu.utilisation.SmAt(s);
    if (sm <= 0 || now <= last_seen) {
      *count = 0;
      return NVML_ERROR_NOT_FOUND;
    }
    if (utilization == nullptr || *count < 1) {
      *count = 1;
      return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    utilization[0] = nvmlProcessUtilizationSample_t{4242 + t.gpu.index, now,
                                                    static_cast<unsigned int>(sm + 0.5),
                                                    static_cast<unsigned int>(t.gpu.utilisation.MemoryAt(s) + 0.5), 0, 0};
    *count = 1;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* power) {
  return Driver().WithDevice(device, [&](const Target& t) {
    if (power == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (t.mig != nullptr) return NVML_ERROR_NOT_SUPPORTED;
    if (nvmlReturn_t r = Refusal(t, "nvmlDeviceGetPowerUsage"); r != NVML_SUCCESS) return r;
    *power = PowerMilliwatts(t.gpu.utilisation.SmAt(SecondsSinceLoad(t)));
    return NVML_SUCCESS;
  });
}

static nvmlReturn_t SmClock(nvmlDevice_t device, nvmlClockType_t type, unsigned int* clock, bool max) {
  return Driver().WithDevice(device, [&](const Target& t) {
    if (clock == nullptr || type > NVML_CLOCK_VIDEO) return NVML_ERROR_INVALID_ARGUMENT;
    if (t.mig != nullptr || type != NVML_CLOCK_SM) return NVML_ERROR_NOT_SUPPORTED;
    if (nvmlReturn_t r = Refusal(t, max ? "nvmlDeviceGetMaxClockInfo" : "nvmlDeviceGetClockInfo"); r != NVML_SUCCESS) {
      return r;
    }
    const double sm = t.gpu.utilisation.SmAt(SecondsSinceLoad(t));
    *clock = max ? kMaxSmClockMhz
                 : kIdleSmClockMhz + static_cast<unsigned int>((kMaxSmClockMhz - kIdleSmClockMhz) * sm / 100.0);
    return NVML_SUCCESS;
  });
}
nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type, unsigned int* clock) {
  return SmClock(device, type, clock, /*max=*/false);
}
nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, nvmlClockType_t type, unsigned int* clock) {
  return SmClock(device, type, clock, /*max=*/true);
}

// NVML_FI_DEV_POWER_INSTANT and _AVERAGE (milliwatts, unsigned int); every other field
// answers NOT_SUPPORTED in its own nvmlReturn, as the real call does for unknown fields.
nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int count, nvmlFieldValue_t* values) {
  return Driver().WithDevice(device, [&](const Target& t) {
    if (values == nullptr || count < 0) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t r = Refusal(t, "nvmlDeviceGetFieldValues"); r != NVML_SUCCESS) return r;
    const double sm = t.gpu.utilisation.SmAt(SecondsSinceLoad(t));
    for (int i = 0; i < count; ++i) {
      nvmlFieldValue_t& v = values[i];
      v.timestamp = static_cast<long long>(NowMicros());
      v.latencyUsec = 0;
      const bool power = v.fieldId == NVML_FI_DEV_POWER_INSTANT || v.fieldId == NVML_FI_DEV_POWER_AVERAGE;
      if (!power || t.mig != nullptr) {
        v.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
        continue;
      }
      v.nvmlReturn = NVML_SUCCESS;
      v.valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
      v.value.uiVal = PowerMilliwatts(sm);
    }
    return NVML_SUCCESS;
  });
}

// ---- GPM -------------------------------------------------------------------------------
// Supported on GPUs with "gpm": true. SM activity = the GPU's curve at the later sample (a MIG
// instance: its constant "gpmSm"), occupancy = half of it; other metrics NOT_SUPPORTED.
nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t device, nvmlGpmSupport_t* support) {
  return Driver().WithDevice(device, [&](const Target& t) {
    if (support == nullptr || support->version != NVML_GPM_SUPPORT_VERSION) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t r = Refusal(t, "nvmlGpmQueryDeviceSupport"); r != NVML_SUCCESS) return r;
    support->isSupportedDevice = t.mig == nullptr && t.gpu.gpm ? 1 : 0;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t* sample) {
  if (sample == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *sample = new nvmlGpmSample_st();
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t sample) {
  if (sample == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  delete sample;
  return NVML_SUCCESS;
}

static nvmlReturn_t GpmSample(nvmlDevice_t device, int gpu_instance_id, nvmlGpmSample_t sample, const char* symbol) {
  return Driver().WithDevice(device, [&](const Target& t) {
    if (sample == nullptr || t.mig != nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!t.gpu.gpm) return NVML_ERROR_NOT_SUPPORTED;
    if (nvmlReturn_t r = Refusal(t, symbol); r != NVML_SUCCESS) return r;
    int mig = -1;
    if (gpu_instance_id >= 0) {
      for (size_t m = 0; m < t.gpu.mig_devices.size(); ++m) {
        if (static_cast<int>(t.gpu.mig_devices[m].gpu_instance_id) == gpu_instance_id) mig = static_cast<int>(m);
      }
      if (mig < 0) return NVML_ERROR_NOT_FOUND;
    }
    *sample = nvmlGpmSample_st{static_cast<int>(t.gpu.index), mig, SecondsSinceLoad(t)};
    return NVML_SUCCESS;
  });
}
nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t device, nvmlGpmSample_t sample) {
  return GpmSample(device, -1, sample, "nvmlGpmSampleGet");
}
nvmlReturn_t nvmlGpmMigSampleGet(nvmlDevice_t device, unsigned int gpu_instance_id, nvmlGpmSample_t sample) {
  return GpmSample(device, static_cast<int>(gpu_instance_id), sample, "nvmlGpmMigSampleGet");
}

nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t* m) {
  if (m == nullptr || m->version != NVML_GPM_METRICS_GET_VERSION || m->numMetrics > NVML_GPM_METRIC_MAX ||
      m->sample1 == nullptr || m->sample2 == nullptr) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  const nvmlGpmSample_st a = *m->sample1, b = *m->sample2;
  if (a.gpu < 0 || a.gpu != b.gpu || a.mig != b.mig || b.seconds < a.seconds) return NVML_ERROR_INVALID_ARGUMENT;
  return Driver().WithMachine([&](const phalanx::fake_nvml::FakeMachine& machine) {
    if (b.gpu >= static_cast<int>(machine.gpus.size())) return NVML_ERROR_INVALID_ARGUMENT;
    const FakeGpu& gpu = machine.gpus[static_cast<size_t>(b.gpu)];
    const double sm = b.mig >= 0 ? gpu.mig_devices.at(static_cast<size_t>(b.mig)).gpm_sm : gpu.utilisation.SmAt(b.seconds);
    for (unsigned int i = 0; i < m->numMetrics; ++i) {
      nvmlGpmMetric_t& metric = m->metrics[i];
      metric.nvmlReturn = NVML_SUCCESS;
      switch (metric.metricId) {
        case NVML_GPM_METRIC_GRAPHICS_UTIL:
        case NVML_GPM_METRIC_SM_UTIL: metric.value = sm; break;
        case NVML_GPM_METRIC_SM_OCCUPANCY: metric.value = sm / 2; break;
        default: metric.nvmlReturn = NVML_ERROR_NOT_SUPPORTED; break;
      }
    }
    return NVML_SUCCESS;
  });
}

// ---- Events --------------------------------------------------------------------------
nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) { return Driver().EventSetCreate(set); }

nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device, unsigned long long* types) {
  return Driver().WithDevice(device, [&](const Target& t) {
    if (types == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (t.mig != nullptr) return NVML_ERROR_NOT_SUPPORTED;
    *types = FakeDriver::kSupportedEvents;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long event_types,
                                      nvmlEventSet_t set) {
  return Driver().RegisterEvents(device, event_types, set);
}

nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data, unsigned int timeout_ms) {
  return Driver().EventSetWait(set, data, timeout_ms, /*with_instance_ids=*/true);
}
nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t* data, unsigned int timeout_ms) {
  return Driver().EventSetWait(set, data, timeout_ms, /*with_instance_ids=*/false);
}

nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) { return Driver().EventSetFree(set); }

}  // extern "C"
