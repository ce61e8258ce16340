#include "core/metrics/build_info.h"

#include <utility>

namespace phalanx::metrics {

Status RegisterBuildInfo(Registry& registry, std::string version, std::string commit) {
  PHX_ASSIGN_OR_RETURN(
      GaugeFamily * family,
      registry.AddGauge(kBuildInfoName,
                        "A metric with a constant value of 1, labeled by the version and git "
                        "commit of the running Phalanx build.",
                        {"version", "commit"}));
  PHX_ASSIGN_OR_RETURN(Gauge * gauge, family->WithLabels({std::move(version), std::move(commit)}));
  gauge->Set(1);
  return OkStatus();
}

}  // namespace phalanx::metrics
