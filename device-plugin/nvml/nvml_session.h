// NvmlSession: NVML initialised for the lifetime of this object (nvmlInit_v2 in Open,
// nvmlShutdown in the destructor). NVML reference-counts Init/Shutdown, so nested
// sessions on one library are fine. Everything that queries devices (discovery, the
// event waiter) must run while a session is open.
//
// Thread-safety: Open/destructor from one thread; NVML calls in between are thread-safe.
// The NvmlApi must outlive the session.
#pragma once

#include <memory>

#include "core/base/result.h"
#include "device-plugin/nvml/nvml_api.h"

namespace phalanx::nvml {

class NvmlSession {
 public:
  // Errors: NVML's own, mapped by NvmlStatus(), e.g. kFailedPrecondition
  // "nvmlInit: Driver Not Loaded (NVML_ERROR_DRIVER_NOT_LOADED)" when no driver runs.
  static Result<std::unique_ptr<NvmlSession>> Open(NvmlApi& api);

  ~NvmlSession();
  NvmlSession(const NvmlSession&) = delete;
  NvmlSession& operator=(const NvmlSession&) = delete;

  NvmlApi& api() const { return api_; }

 private:
  explicit NvmlSession(NvmlApi& api) : api_(api) {}
  NvmlApi& api_;
};

}  // namespace phalanx::nvml
