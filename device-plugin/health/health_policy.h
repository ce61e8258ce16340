// Which NVML events make a device Unhealthy (issue 4 §6), as pure functions.
//
// XID critical errors are fatal unless listed in HealthConfig::ignored_xids (default 13,
// 31, 43, 45, 68, 109: application faults such as illegal memory access, MMU faults,
// preemptive cleanup, robust channel/ctxsw timeouts, which say the workload crashed, not
// the GPU; NVIDIA's plugin ignores the same set). XID 999 (NVML could not name it) is
// treated as fatal. Double-bit ECC errors are fatal; single-bit ECC errors are corrected
// by hardware and ignored. An event attributed to a MIG instance marks only that MIG
// device; otherwise the whole GPU (and so every MIG device on it). Thread-safe.
#pragma once

#include <optional>
#include <string>

#include "device-plugin/nvml/nvml_event_waiter.h"
#include "device-plugin/plugin/config.h"

namespace phalanx::device_plugin {

struct HealthVerdict {
  std::string device_uuid;  // GPU or MIG UUID to mark
  std::string reason;       // "XID 79", "double-bit ECC error"
  unsigned long long xid = 0;
};

// nullopt: the event does not affect health.
std::optional<HealthVerdict> ClassifyEvent(const nvml::NvmlEvent& event, const HealthConfig& config);

}  // namespace phalanx::device_plugin
