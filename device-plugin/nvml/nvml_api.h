// NvmlApi: the NVML C API as an interface (go-nvml's Interface, DCGM's entry-point table).
//
// One virtual method per entry point in nvml_entry_points.inc, with the C signature
// minus the "nvml" prefix (nvmlDeviceGetUUID -> DeviceGetUUID), returning the raw
// nvmlReturn_t: driver codes stay typed until the edge (discovery, event waiter), where
// they become phalanx::Status through NvmlStatus() in nvml_status.h.
//
// Implementations: DlNvml (dlopen of libnvidia-ml.so.1 or the fake driver built by
// tests/fakes/nvml); tests of code above the binding may implement it in-process.
// A method whose symbol the library lacks returns NVML_ERROR_FUNCTION_NOT_FOUND.
//
// Thread-safety: as NVML itself (the library is thread-safe after Init); the interface
// adds no state.
#pragma once

#include <string_view>

#include "device-plugin/nvml/nvml_types.h"

namespace phalanx::nvml {

// Marks a MIG instance ID as absent in nvmlEventData_t (NVML reports 0xFFFFFFFF).
inline constexpr unsigned int kNoInstanceId = 0xFFFFFFFFu;

class NvmlApi {
 public:
  virtual ~NvmlApi() = default;

#define NVML_FUNCTION(method, required, params, args) virtual nvmlReturn_t method params = 0;
#include "device-plugin/nvml/nvml_entry_points.inc"

  // nvmlErrorString: the driver's text for `result` (never null).
  virtual const char* ErrorString(nvmlReturn_t result) = 0;
};

}  // namespace phalanx::nvml
