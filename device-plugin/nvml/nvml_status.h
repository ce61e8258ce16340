// Turning NVML return codes into phalanx::Status at the edge of the binding.
//
// Message shape: "<function>: <nvmlErrorString text> (NVML_ERROR_<NAME>)", optionally
// prefixed by the caller's context, e.g.
//   "GPU 3: nvmlDeviceGetUUID: GPU is lost (NVML_ERROR_GPU_IS_LOST)".
// The NVML code name is always in the message so logs and tests can see the exact cause.
//
// Code mapping (what the caller should do next):
//   DRIVER_NOT_LOADED, LIBRARY_NOT_FOUND, UNINITIALIZED, LIB_RM_VERSION_MISMATCH,
//   INSUFFICIENT_POWER, IN_USE, RESET_REQUIRED, INVALID_STATE, NOT_READY
//                                   -> kFailedPrecondition (fix the host, then retry)
//   GPU_IS_LOST, IRQ_ISSUE          -> kUnavailable (device unreachable now; re-probe later)
//   TIMEOUT                         -> kDeadlineExceeded
//   NOT_SUPPORTED, FUNCTION_NOT_FOUND, DEPRECATED, VGPU_ECC_NOT_SUPPORTED, FREQ_NOT_SUPPORTED
//                                   -> kUnimplemented
//   NO_PERMISSION, OPERATING_SYSTEM -> kPermissionDenied
//   INVALID_ARGUMENT, ARGUMENT_VERSION_MISMATCH -> kInvalidArgument
//   NOT_FOUND, GPU_NOT_FOUND, NO_DATA -> kNotFound
//   MEMORY, INSUFFICIENT_RESOURCES  -> kResourceExhausted
//   INSUFFICIENT_SIZE               -> kInternal (our buffer was too small: a bug)
//   CORRUPTED_INFOROM               -> kDataLoss
//   anything else                   -> kUnknown
// Thread-safe (pure functions).
#pragma once

#include <string_view>

#include "core/base/status.h"
#include "device-plugin/nvml/nvml_api.h"
#include "device-plugin/nvml/nvml_types.h"

namespace phalanx::nvml {

// "NVML_ERROR_GPU_IS_LOST", "NVML_SUCCESS"; "NVML_RETURN_<n>" for unknown values.
std::string_view NvmlReturnName(nvmlReturn_t result);

// The StatusCode NVML `result` maps to (table above); kOk for NVML_SUCCESS.
StatusCode NvmlStatusCode(nvmlReturn_t result);

// OK for NVML_SUCCESS, else a Status as described above. `function` is the C name
// ("nvmlDeviceGetUUID"); `context` (may be empty) says which object ("GPU 3").
// The text comes from api.ErrorString(result).
Status NvmlStatus(NvmlApi& api, nvmlReturn_t result, std::string_view function,
                  std::string_view context = {});

}  // namespace phalanx::nvml
