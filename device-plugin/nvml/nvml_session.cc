#include "device-plugin/nvml/nvml_session.h"

#include "device-plugin/nvml/nvml_status.h"

namespace phalanx::nvml {

Result<std::unique_ptr<NvmlSession>> NvmlSession::Open(NvmlApi& api) {
  PHX_RETURN_IF_ERROR(NvmlStatus(api, api.Init(), "nvmlInit"));
  return std::unique_ptr<NvmlSession>(new NvmlSession(api));
}

NvmlSession::~NvmlSession() {
  // A failing shutdown leaves nothing to recover: the process is letting go of NVML.
  (void)api_.Shutdown();
}

}  // namespace phalanx::nvml
