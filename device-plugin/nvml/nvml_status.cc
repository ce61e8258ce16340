#include "device-plugin/nvml/nvml_status.h"

#include <string>

#include <fmt/format.h>

namespace phalanx::nvml {

std::string_view NvmlReturnName(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS: return "NVML_SUCCESS";
    case NVML_ERROR_UNINITIALIZED: return "NVML_ERROR_UNINITIALIZED";
    case NVML_ERROR_INVALID_ARGUMENT: return "NVML_ERROR_INVALID_ARGUMENT";
    case NVML_ERROR_NOT_SUPPORTED: return "NVML_ERROR_NOT_SUPPORTED";
    case NVML_ERROR_NO_PERMISSION: return "NVML_ERROR_NO_PERMISSION";
    case NVML_ERROR_ALREADY_INITIALIZED: return "NVML_ERROR_ALREADY_INITIALIZED";
    case NVML_ERROR_NOT_FOUND: return "NVML_ERROR_NOT_FOUND";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "NVML_ERROR_INSUFFICIENT_SIZE";
    case NVML_ERROR_INSUFFICIENT_POWER: return "NVML_ERROR_INSUFFICIENT_POWER";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "NVML_ERROR_DRIVER_NOT_LOADED";
    case NVML_ERROR_TIMEOUT: return "NVML_ERROR_TIMEOUT";
    case NVML_ERROR_IRQ_ISSUE: return "NVML_ERROR_IRQ_ISSUE";
    case NVML_ERROR_LIBRARY_NOT_FOUND: return "NVML_ERROR_LIBRARY_NOT_FOUND";
    case NVML_ERROR_FUNCTION_NOT_FOUND: return "NVML_ERROR_FUNCTION_NOT_FOUND";
    case NVML_ERROR_CORRUPTED_INFOROM: return "NVML_ERROR_CORRUPTED_INFOROM";
    case NVML_ERROR_GPU_IS_LOST: return "NVML_ERROR_GPU_IS_LOST";
    case NVML_ERROR_RESET_REQUIRED: return "NVML_ERROR_RESET_REQUIRED";
    case NVML_ERROR_OPERATING_SYSTEM: return "NVML_ERROR_OPERATING_SYSTEM";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH: return "NVML_ERROR_LIB_RM_VERSION_MISMATCH";
    case NVML_ERROR_IN_USE: return "NVML_ERROR_IN_USE";
    case NVML_ERROR_MEMORY: return "NVML_ERROR_MEMORY";
    case NVML_ERROR_NO_DATA: return "NVML_ERROR_NO_DATA";
    case NVML_ERROR_VGPU_ECC_NOT_SUPPORTED: return "NVML_ERROR_VGPU_ECC_NOT_SUPPORTED";
    case NVML_ERROR_INSUFFICIENT_RESOURCES: return "NVML_ERROR_INSUFFICIENT_RESOURCES";
    case NVML_ERROR_FREQ_NOT_SUPPORTED: return "NVML_ERROR_FREQ_NOT_SUPPORTED";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "NVML_ERROR_ARGUMENT_VERSION_MISMATCH";
    case NVML_ERROR_DEPRECATED: return "NVML_ERROR_DEPRECATED";
    case NVML_ERROR_NOT_READY: return "NVML_ERROR_NOT_READY";
    case NVML_ERROR_GPU_NOT_FOUND: return "NVML_ERROR_GPU_NOT_FOUND";
    case NVML_ERROR_INVALID_STATE: return "NVML_ERROR_INVALID_STATE";
    case NVML_ERROR_UNKNOWN: return "NVML_ERROR_UNKNOWN";
  }
  return "NVML_RETURN_UNLISTED";
}

StatusCode NvmlStatusCode(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS:
      return StatusCode::kOk;
    case NVML_ERROR_DRIVER_NOT_LOADED:
    case NVML_ERROR_LIBRARY_NOT_FOUND:
    case NVML_ERROR_UNINITIALIZED:
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
    case NVML_ERROR_INSUFFICIENT_POWER:
    case NVML_ERROR_IN_USE:
    case NVML_ERROR_RESET_REQUIRED:
    case NVML_ERROR_INVALID_STATE:
    case NVML_ERROR_NOT_READY:
    case NVML_ERROR_ALREADY_INITIALIZED:
      return StatusCode::kFailedPrecondition;
    case NVML_ERROR_GPU_IS_LOST:
    case NVML_ERROR_IRQ_ISSUE:
      return StatusCode::kUnavailable;
    case NVML_ERROR_TIMEOUT:
      return StatusCode::kDeadlineExceeded;
    case NVML_ERROR_NOT_SUPPORTED:
    case NVML_ERROR_FUNCTION_NOT_FOUND:
    case NVML_ERROR_DEPRECATED:
    case NVML_ERROR_VGPU_ECC_NOT_SUPPORTED:
    case NVML_ERROR_FREQ_NOT_SUPPORTED:
      return StatusCode::kUnimplemented;
    case NVML_ERROR_NO_PERMISSION:
    case NVML_ERROR_OPERATING_SYSTEM:
      return StatusCode::kPermissionDenied;
    case NVML_ERROR_INVALID_ARGUMENT:
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
      return StatusCode::kInvalidArgument;
    case NVML_ERROR_NOT_FOUND:
    case NVML_ERROR_GPU_NOT_FOUND:
    case NVML_ERROR_NO_DATA:
      return StatusCode::kNotFound;
    case NVML_ERROR_MEMORY:
    case NVML_ERROR_INSUFFICIENT_RESOURCES:
      return StatusCode::kResourceExhausted;
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return StatusCode::kInternal;
    case NVML_ERROR_CORRUPTED_INFOROM:
      return StatusCode::kDataLoss;
    case NVML_ERROR_UNKNOWN:
      return StatusCode::kUnknown;
  }
  return StatusCode::kUnknown;
}

Status NvmlStatus(NvmlApi& api, nvmlReturn_t result, std::string_view function,
                  std::string_view context) {
  if (result == NVML_SUCCESS) return OkStatus();
  const char* text = api.ErrorString(result);
  std::string message =
      fmt::format("{}: {} ({})", function, text != nullptr ? text : "unknown error",
                  NvmlReturnName(result));
  if (!context.empty()) message = fmt::format("{}: {}", context, message);
  return Status(NvmlStatusCode(result), std::move(message));
}

}  // namespace phalanx::nvml
