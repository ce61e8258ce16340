// DlNvml: NvmlApi over a dynamically loaded libnvidia-ml.so.1 (go-nvml's lib.go,
// DCGM's nvml_loader.cpp).
//
// Load() dlopens the library once and resolves every entry point of
// nvml_entry_points.inc, taking the first exported symbol of each method's list
// (nvmlInit_v2 before nvmlInit, nvmlDeviceGetPciInfo_v3 before _v2 before the bare
// name). A method with no symbol is not an error unless it is required: calling it
// returns NVML_ERROR_FUNCTION_NOT_FOUND, so an older driver degrades instead of
// crashing. The library stays loaded for the object's lifetime (dlclose in the
// destructor); it is not initialised here (see NvmlSession).
//
// Thread-safety: immutable after Load(); calls are as thread-safe as NVML itself.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "core/base/result.h"
#include "device-plugin/nvml/nvml_api.h"

namespace phalanx::nvml {

class DlNvml final : public NvmlApi {
 public:
  // What the daemon loads unless told otherwise (--nvml-library).
  static constexpr std::string_view kDefaultLibrary = "libnvidia-ml.so.1";

  // Loads `path` (a file name searched like any dlopen, or an absolute path).
  // Errors: kFailedPrecondition with dlerror()'s text when the library cannot be
  // loaded ("NVIDIA driver not installed?"), kFailedPrecondition naming the symbols
  // when a required entry point (init, shutdown, device count/handle, error string)
  // is missing.
  static Result<std::unique_ptr<DlNvml>> Load(std::string_view path = kDefaultLibrary);

  ~DlNvml() override;
  DlNvml(const DlNvml&) = delete;
  DlNvml& operator=(const DlNvml&) = delete;

  // The symbol `method` ("Init", "DeviceGetPciInfo") is bound to ("nvmlInit_v2"), or
  // "" when the library has none / the method is unknown. For logs and tests.
  std::string_view ResolvedSymbol(std::string_view method) const;
  const std::string& path() const { return path_; }

#define NVML_FUNCTION(method, required, params, args) nvmlReturn_t method params override;
#include "device-plugin/nvml/nvml_entry_points.inc"

  const char* ErrorString(nvmlReturn_t result) override;

 private:
  DlNvml(void* handle, std::string path);
  Status ResolveSymbols();

  void* handle_;
  std::string path_;
  using ErrorStringFn = const char* (*)(nvmlReturn_t);
  ErrorStringFn error_string_ = nullptr;

  // One function pointer and bound symbol name per entry point.
#define NVML_FUNCTION(method, required, params, args) \
  using method##Fn = nvmlReturn_t(*) params;          \
  method##Fn method##_ = nullptr;                     \
  std::string_view method##_symbol_;
#include "device-plugin/nvml/nvml_entry_points.inc"
};

}  // namespace phalanx::nvml
