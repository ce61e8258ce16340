// The subset of the NVML C ABI that Phalanx uses, declared here instead of including
// NVIDIA's nvml.h (not installed on build machines, and not ours to ship).
//
// Everything below is transcribed from the public NVML API reference
// (docs.nvidia.com/deploy/nvml-api): type names, enum values, struct layouts and buffer
// sizes must match the real library bit for bit, because the dlopen loader
// (dl_nvml.cc) passes these structs straight to libnvidia-ml.so.1 and the fake driver
// (tests/fakes/nvml) fills them in. Only types are declared here; the function
// signatures live in nvml_entry_points.inc.
//
// Plain C-compatible declarations in the global namespace (as in nvml.h), so that the
// fake library can export functions with exactly these types.
#pragma once

#include <cstdint>

extern "C" {

// ---- Opaque handles ---------------------------------------------------------------
typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct nvmlEventSet_st* nvmlEventSet_t;
typedef struct nvmlGpuInstance_st* nvmlGpuInstance_t;

// ---- Return codes -----------------------------------------------------------------
typedef enum nvmlReturn_enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_ALREADY_INITIALIZED = 5,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_INSUFFICIENT_POWER = 8,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_TIMEOUT = 10,
  NVML_ERROR_IRQ_ISSUE = 11,
  NVML_ERROR_LIBRARY_NOT_FOUND = 12,
  NVML_ERROR_FUNCTION_NOT_FOUND = 13,
  NVML_ERROR_CORRUPTED_INFOROM = 14,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_RESET_REQUIRED = 16,
  NVML_ERROR_OPERATING_SYSTEM = 17,
  NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
  NVML_ERROR_IN_USE = 19,
  NVML_ERROR_MEMORY = 20,
  NVML_ERROR_NO_DATA = 21,
  NVML_ERROR_VGPU_ECC_NOT_SUPPORTED = 22,
  NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
  NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
  NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
  NVML_ERROR_DEPRECATED = 26,
  NVML_ERROR_NOT_READY = 27,
  NVML_ERROR_GPU_NOT_FOUND = 28,
  NVML_ERROR_INVALID_STATE = 29,
  NVML_ERROR_UNKNOWN = 999
} nvmlReturn_t;

typedef enum nvmlEnableState_enum {
  NVML_FEATURE_DISABLED = 0,
  NVML_FEATURE_ENABLED = 1
} nvmlEnableState_t;

// ---- Buffer sizes -----------------------------------------------------------------
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE 32
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE 16

// ---- Memory -----------------------------------------------------------------------
typedef struct nvmlMemory_st {
  unsigned long long total;  // bytes
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_t;

// ---- PCI --------------------------------------------------------------------------
// Layout of the _v3 query. The legacy nvmlDeviceGetPciInfo/_v2 wrote a 16-byte busId
// at offset 0 (where busIdLegacy is) and never write busId[32], which is why the
// binding formats bus IDs from domain/bus/device rather than trusting either string.
typedef struct nvmlPciInfo_st {
  char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];  // "%04X:%02X:%02X.0"
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;     // 16-bit device id << 16 | 16-bit vendor id
  unsigned int pciSubSystemId;
  char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];  // "%08X:%02X:%02X.0"
} nvmlPciInfo_t;

// ---- Topology ---------------------------------------------------------------------
// Closest common PCIe ancestor of two devices (nvidia-smi topo -m: X/PIX/PXB/PHB/NODE/SYS).
typedef enum nvmlGpuLevel_enum {
  NVML_TOPOLOGY_INTERNAL = 0,     // same board / same GPU
  NVML_TOPOLOGY_SINGLE = 10,      // at most one PCIe switch
  NVML_TOPOLOGY_MULTIPLE = 20,    // several PCIe switches, no host bridge
  NVML_TOPOLOGY_HOSTBRIDGE = 30,  // the same PCIe host bridge
  NVML_TOPOLOGY_NODE = 40,        // host bridges within one NUMA node
  NVML_TOPOLOGY_SYSTEM = 50       // across NUMA nodes (SMP interconnect)
} nvmlGpuTopologyLevel_t;

// ---- NVLink -----------------------------------------------------------------------
#define NVML_NVLINK_MAX_LINKS 18

typedef enum nvmlIntNvLinkDeviceType_enum {
  NVML_NVLINK_DEVICE_TYPE_GPU = 0x00,
  NVML_NVLINK_DEVICE_TYPE_IBMNPU = 0x01,
  NVML_NVLINK_DEVICE_TYPE_SWITCH = 0x02,
  NVML_NVLINK_DEVICE_TYPE_UNKNOWN = 0xFF
} nvmlIntNvLinkDeviceType_t;

// What nvmlDeviceGetNvLinkVersion reports on current drivers. Older drivers returned
// the bare generation number instead, so treat the value as informational.
typedef enum nvmlNvlinkVersion_enum {
  NVML_NVLINK_VERSION_INVALID = 0,
  NVML_NVLINK_VERSION_1_0 = 1,
  NVML_NVLINK_VERSION_2_0 = 2,
  NVML_NVLINK_VERSION_2_2 = 3,
  NVML_NVLINK_VERSION_3_0 = 4,
  NVML_NVLINK_VERSION_3_1 = 5,
  NVML_NVLINK_VERSION_4_0 = 6,
  NVML_NVLINK_VERSION_5_0 = 7
} nvmlNvlinkVersion_t;

// ---- MIG --------------------------------------------------------------------------
#define NVML_DEVICE_MIG_DISABLE 0x0
#define NVML_DEVICE_MIG_ENABLE 0x1

// Profile *indices* accepted by nvmlDeviceGetGpuInstanceProfileInfo (not profile IDs:
// the returned info.id is the ID that nvmlGpuInstanceInfo_t.profileId refers to).
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE 0x0
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE 0x1
#define NVML_GPU_INSTANCE_PROFILE_3_SLICE 0x2
#define NVML_GPU_INSTANCE_PROFILE_4_SLICE 0x3
#define NVML_GPU_INSTANCE_PROFILE_7_SLICE 0x4
#define NVML_GPU_INSTANCE_PROFILE_8_SLICE 0x5
#define NVML_GPU_INSTANCE_PROFILE_6_SLICE 0x6
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1 0x7  // with media extensions ("+me")
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1 0x8  // with media extensions ("+me")
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2 0x9  // double memory
#define NVML_GPU_INSTANCE_PROFILE_COUNT 0xA

typedef struct nvmlGpuInstancePlacement_st {
  unsigned int start;  // first memory slice
  unsigned int size;   // memory slices occupied
} nvmlGpuInstancePlacement_t;

typedef struct nvmlGpuInstanceProfileInfo_st {
  unsigned int id;  // profile ID
  unsigned int isP2pSupported;
  unsigned int sliceCount;  // GPU (compute) slices
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int copyEngineCount;
  unsigned int decoderCount;
  unsigned int encoderCount;
  unsigned int jpegCount;
  unsigned int ofaCount;
  unsigned long long memorySizeMB;
} nvmlGpuInstanceProfileInfo_t;

typedef struct nvmlGpuInstanceInfo_st {
  nvmlDevice_t device;  // parent GPU
  unsigned int id;      // GPU instance ID
  unsigned int profileId;
  nvmlGpuInstancePlacement_t placement;
} nvmlGpuInstanceInfo_t;

// ---- Utilisation sampling -----------------------------------------------------------
// nvmlDeviceGetUtilizationRates: percent of the last sample period (1/6 s .. 1 s, by
// product) in which a kernel ran (gpu) / device memory was read or written (memory).
typedef struct nvmlUtilization_st {
  unsigned int gpu;
  unsigned int memory;
} nvmlUtilization_t;

// nvmlDeviceGetProcessUtilization: one sample per process and driver sample period.
typedef struct nvmlProcessUtilizationSample_st {
  unsigned int pid;
  unsigned long long timeStamp;  // CPU timestamp, microseconds
  unsigned int smUtil;
  unsigned int memUtil;
  unsigned int encUtil;
  unsigned int decUtil;
} nvmlProcessUtilizationSample_t;

typedef enum nvmlClockType_enum {
  NVML_CLOCK_GRAPHICS = 0,
  NVML_CLOCK_SM = 1,
  NVML_CLOCK_MEM = 2,
  NVML_CLOCK_VIDEO = 3
} nvmlClockType_t;

// nvmlDeviceGetFieldValues.
typedef enum nvmlValueType_enum {
  NVML_VALUE_TYPE_DOUBLE = 0,
  NVML_VALUE_TYPE_UNSIGNED_INT = 1,
  NVML_VALUE_TYPE_UNSIGNED_LONG = 2,
  NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3,
  NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4,
  NVML_VALUE_TYPE_SIGNED_INT = 5,
  NVML_VALUE_TYPE_UNSIGNED_SHORT = 6
} nvmlValueType_t;

typedef union nvmlValue_st {
  double dVal;
  int siVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  signed long long sllVal;
  unsigned short usVal;
} nvmlValue_t;

typedef struct nvmlFieldValue_st {
  unsigned int fieldId;      // NVML_FI_*; set by the caller
  unsigned int scopeId;      // 0 = the GPU (power fields: 1 = the whole module)
  long long timestamp;       // microseconds since 1970
  long long latencyUsec;
  nvmlValueType_t valueType;
  nvmlReturn_t nvmlReturn;   // per field: check before reading value
  nvmlValue_t value;
} nvmlFieldValue_t;

// Field IDs (nvml.h R535+). NVML offers no SM-activity/occupancy field: those exist only as
// GPM metrics (below), see docs/device-plugin.md.
#define NVML_FI_DEV_POWER_AVERAGE 185  // mW, 1 s average; Ampere (not GA100) and newer
#define NVML_FI_DEV_POWER_INSTANT 186  // mW, current; every architecture with power readings

// ---- GPM (GPU Performance Monitoring, Hopper and newer) --------------------------------
// SM activity and occupancy between two samples, per GPU or per MIG GPU instance
// (nvmlGpmSampleGet / nvmlGpmMigSampleGet, then nvmlGpmMetricsGet on the pair).
typedef struct nvmlGpmSample_st* nvmlGpmSample_t;

typedef enum nvmlGpmMetricId_enum {
  NVML_GPM_METRIC_GRAPHICS_UTIL = 1,  // % of time any graphics/compute engine was active
  NVML_GPM_METRIC_SM_UTIL = 2,        // % of SMs busy, averaged over the interval
  NVML_GPM_METRIC_SM_OCCUPANCY = 3    // % of resident warps vs the theoretical maximum
} nvmlGpmMetricId_t;

// The array size of nvml.h R550 (go-nvml 0.13); the driver touches only numMetrics entries.
#define NVML_GPM_METRIC_MAX 333
#define NVML_GPM_METRICS_GET_VERSION 1
#define NVML_GPM_SUPPORT_VERSION 1

typedef struct nvmlGpmMetric_st {
  unsigned int metricId;
  nvmlReturn_t nvmlReturn;
  double value;
  struct {
    char* shortName;
    char* longName;
    char* unit;
  } metricInfo;
} nvmlGpmMetric_t;

typedef struct nvmlGpmMetricsGet_st {
  unsigned int version;     // NVML_GPM_METRICS_GET_VERSION
  unsigned int numMetrics;
  nvmlGpmSample_t sample1;  // the earlier sample
  nvmlGpmSample_t sample2;
  nvmlGpmMetric_t metrics[NVML_GPM_METRIC_MAX];
} nvmlGpmMetricsGet_t;

typedef struct nvmlGpmSupport_st {
  unsigned int version;  // NVML_GPM_SUPPORT_VERSION
  unsigned int isSupportedDevice;
} nvmlGpmSupport_t;

// ---- Events -----------------------------------------------------------------------
#define nvmlEventTypeSingleBitEccError 0x0000000000000001ULL
#define nvmlEventTypeDoubleBitEccError 0x0000000000000002ULL
#define nvmlEventTypePState 0x0000000000000004ULL
#define nvmlEventTypeXidCriticalError 0x0000000000000008ULL
#define nvmlEventTypeClock 0x0000000000000010ULL
#define nvmlEventTypeNone 0x0000000000000000ULL

// Filled by nvmlEventSetWait_v2. The legacy nvmlEventSetWait writes only the first
// three fields, so callers zero-initialise and treat the instance IDs as absent.
typedef struct nvmlEventData_st {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;  // the XID for nvmlEventTypeXidCriticalError (999 = unknown)
  unsigned int gpuInstanceId;      // MIG GPU instance, or 0xFFFFFFFF
  unsigned int computeInstanceId;  // MIG compute instance, or 0xFFFFFFFF
} nvmlEventData_t;

}  // extern "C"
