#include "device-plugin/nvml/nvml_status.h"

#include <gtest/gtest.h>

namespace phalanx::nvml {
namespace {

template <typename... T>
void Ignore(const T&...) {}

// NvmlApi whose every entry point is unsupported; only ErrorString matters here.
class StubNvml : public NvmlApi {
 public:
#define NVML_FUNCTION(method, required, params, args) \
  nvmlReturn_t method params override {               \
    Ignore args;                                      \
    return NVML_ERROR_NOT_SUPPORTED;                  \
  }
#include "device-plugin/nvml/nvml_entry_points.inc"
  const char* ErrorString(nvmlReturn_t result) override {
    return result == NVML_ERROR_GPU_IS_LOST ? "GPU is lost" : "Some Error";
  }
};

TEST(NvmlStatusTest, SuccessIsOk) {
  StubNvml api;
  EXPECT_TRUE(NvmlStatus(api, NVML_SUCCESS, "nvmlDeviceGetUUID", "GPU 1").ok());
}

TEST(NvmlStatusTest, MessageNamesFunctionTextAndCode) {
  StubNvml api;
  Status s = NvmlStatus(api, NVML_ERROR_GPU_IS_LOST, "nvmlDeviceGetUUID", "GPU 3");
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_EQ(s.message(), "GPU 3: nvmlDeviceGetUUID: GPU is lost (NVML_ERROR_GPU_IS_LOST)");
  Status no_context = NvmlStatus(api, NVML_ERROR_TIMEOUT, "nvmlEventSetWait");
  EXPECT_EQ(no_context.message(), "nvmlEventSetWait: Some Error (NVML_ERROR_TIMEOUT)");
}

TEST(NvmlStatusTest, CodesTellCallerWhatToDo) {
  struct Case {
    nvmlReturn_t nvml;
    StatusCode want;
  };
  const Case cases[] = {
      {NVML_ERROR_DRIVER_NOT_LOADED, StatusCode::kFailedPrecondition},
      {NVML_ERROR_UNINITIALIZED, StatusCode::kFailedPrecondition},
      {NVML_ERROR_LIB_RM_VERSION_MISMATCH, StatusCode::kFailedPrecondition},
      {NVML_ERROR_GPU_IS_LOST, StatusCode::kUnavailable},
      {NVML_ERROR_TIMEOUT, StatusCode::kDeadlineExceeded},
      {NVML_ERROR_NOT_SUPPORTED, StatusCode::kUnimplemented},
      {NVML_ERROR_FUNCTION_NOT_FOUND, StatusCode::kUnimplemented},
      {NVML_ERROR_NO_PERMISSION, StatusCode::kPermissionDenied},
      {NVML_ERROR_INVALID_ARGUMENT, StatusCode::kInvalidArgument},
      {NVML_ERROR_NOT_FOUND, StatusCode::kNotFound},
      {NVML_ERROR_INSUFFICIENT_SIZE, StatusCode::kInternal},
      {NVML_ERROR_CORRUPTED_INFOROM, StatusCode::kDataLoss},
      {NVML_ERROR_UNKNOWN, StatusCode::kUnknown},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(NvmlReturnName(c.nvml));
    EXPECT_EQ(NvmlStatusCode(c.nvml), c.want);
  }
  EXPECT_EQ(NvmlReturnName(static_cast<nvmlReturn_t>(12345)), "NVML_RETURN_UNLISTED");
}

}  // namespace
}  // namespace phalanx::nvml
