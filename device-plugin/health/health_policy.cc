#include "device-plugin/health/health_policy.h"

#include <fmt/format.h>

namespace phalanx::device_plugin {

std::optional<HealthVerdict> ClassifyEvent(const nvml::NvmlEvent& event, const HealthConfig& config) {
  HealthVerdict v;
  v.device_uuid = event.mig_uuid ? event.mig_uuid->str() : event.gpu_uuid.str();
  switch (event.type) {
    case nvml::NvmlEventType::kXidCriticalError:
      if (config.ignored_xids.count(event.xid)) return std::nullopt;
      v.xid = event.xid;
      v.reason = event.xid == 999 ? "XID 999 (unknown)" : fmt::format("XID {}", event.xid);
      return v;
    case nvml::NvmlEventType::kDoubleBitEccError:
      v.reason = "double-bit ECC error";
      return v;
    case nvml::NvmlEventType::kSingleBitEccError:
    case nvml::NvmlEventType::kOther:
      return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace phalanx::device_plugin
